// The portal's own script: the usage and GPU charts (Chart.js, loaded on those pages only) and the launch form's
// fields per rung. No inline script anywhere: the Content-Security-Policy allows scripts from Ladder itself only.
(function () {
  "use strict";
  function chart() {
    var canvas = document.getElementById("chart");
    var source = document.getElementById("chart-data");
    if (!canvas || !source || typeof window.Chart === "undefined") { return; }
    var data = JSON.parse(source.textContent);
    new window.Chart(canvas, {
      type: "bar",
      data: {
        labels: data.days,
        datasets: data.series.map(function (s) { return { label: s.sku, data: s.amounts.map(Number) }; })
      },
      options: { animation: false, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } }
    });
  }
  // The finance console's charts: revenue against the cost of billed GPU-hours per rung, and where the fleet's cost
  // went per month (billed, idle, stranded, held unbilled).
  function financeCharts() {
    var source = document.getElementById("margin-data");
    if (!source || typeof window.Chart === "undefined") { return; }
    var data = JSON.parse(source.textContent);
    var rungs = document.getElementById("margin-chart");
    if (rungs) {
      new window.Chart(rungs, {
        type: "bar",
        data: { labels: data.rungs, datasets: [
          { label: "revenue", data: data.revenue.map(Number) },
          { label: "cost of billed GPU-hours", data: data.cost.map(Number) }
        ] },
        options: { animation: false, scales: { y: { beginAtZero: true } } }
      });
    }
    var fleet = document.getElementById("fleet-chart");
    if (fleet) {
      var parts = { billed: "billed", idle: "idle", stranded: "stranded", unbilled: "held, unbilled" };
      new window.Chart(fleet, {
        type: "bar",
        data: { labels: data.months, datasets: Object.keys(parts).map(function (k) {
          return { label: parts[k], data: data.fleet[k].map(Number) };
        }) },
        options: { animation: false, scales: { x: { stacked: true }, y: { stacked: true } } }
      });
    }
  }
  // The launch form shows only the fields its rung takes.
  var FIELDS = {
    bare_metal: ["name", "gpu_model", "region", "nodes", "os_image", "cloud_init", "ssh_keys", "env", "secrets"],
    vm: ["name", "gpu_model", "region", "gpus", "capacity_class", "reservation", "os_image", "cloud_init", "ssh_keys",
      "env", "secrets", "port", "expose"]
  };
  var IMAGE = ["image", "command", "env", "secrets", "secret_files", "pull_secret", "dataset", "dataset_path",
    "scratch_gb", "scratch_path", "port", "expose"];
  FIELDS.confidential_vm = ["name", "gpu_model", "region", "gpus", "capacity_class", "reservation"].concat(IMAGE);
  FIELDS.container = ["name", "gpu_model", "region", "gpus", "mig_profile", "capacity_class", "reservation",
    "ssh_keys"].concat(IMAGE);
  FIELDS.job = ["name", "gpu_model", "region", "gpus", "gang_size", "capacity_class", "reservation", "on_preemption", "checkpoint_path",
    "checkpoint_interval"].concat(IMAGE);
  FIELDS.serverless = ["name", "gpu_model", "region", "gpus", "mig_profile", "share_mode", "share"].concat(IMAGE);
  // Every rung but bare metal (whole hosts) sells vCPUs and memory with its GPUs, and takes more or fewer.
  ["vm", "confidential_vm", "container", "job", "serverless"].forEach(function (rung) {
    FIELDS[rung] = FIELDS[rung].concat(["cpu", "memory_gib"]);
  });

  // An allocation's GPUs over the last hour: activity (per cent of cycles) and memory used with power.
  function gpuCharts() {
    var source = document.getElementById("gpu-chart-data");
    if (!source || typeof window.Chart === "undefined") { return; }
    var data = JSON.parse(source.textContent);
    new window.Chart(document.getElementById("gpu-chart"), {
      type: "line",
      data: { labels: data.labels, datasets: [
        { label: "SM active %", data: data.sm },
        { label: "Tensor cores active %", data: data.tensor },
        { label: "Memory interface active %", data: data.dram }
      ] },
      options: { animation: false, scales: { y: { min: 0, max: 100 } } }
    });
    var memory = [{ label: "Memory used (GB)", data: data.memory, yAxisID: "y" }];
    var scales = { y: { min: 0, max: data.memory_total || undefined } };
    if (data.power.length) {
      memory.push({ label: "Power (W)", data: data.power, yAxisID: "power" });
      scales.power = { position: "right", min: 0, grid: { drawOnChartArea: false } };
    }
    new window.Chart(document.getElementById("gpu-memory-chart"), {
      type: "line", data: { labels: data.labels, datasets: memory }, options: { animation: false, scales: scales }
    });
  }
  function launchForm() {
    var form = document.querySelector("form[class^='rung-']");
    if (!form) { return; }
    var rung = form.className.replace("rung-", "");
    var shown = FIELDS[rung] || [];
    form.querySelectorAll("[data-field]").forEach(function (field) {
      field.hidden = shown.indexOf(field.getAttribute("data-field")) < 0 && !field.classList.contains("invalid");
    });
  }
  // A table wider than the screen scrolls sideways: it takes the keyboard focus so it can be scrolled without a
  // mouse, named by the heading before it.
  function scrollableTables(root) {
    root.querySelectorAll("table").forEach(function (table) {
      if (table.scrollWidth > table.clientWidth && !table.hasAttribute("tabindex")) {
        table.setAttribute("tabindex", "0");
        var heading = table.previousElementSibling;
        while (heading && !/^H[1-6]$/.test(heading.tagName)) { heading = heading.previousElementSibling; }
        if (heading && !table.hasAttribute("aria-label")) { table.setAttribute("aria-label", heading.textContent.trim()); }
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    chart(); financeCharts(); gpuCharts(); launchForm(); scrollableTables(document);
  });
  document.addEventListener("htmx:afterSwap", function (event) { scrollableTables(event.target); });
  window.addEventListener("resize", function () { scrollableTables(document); });
})();
