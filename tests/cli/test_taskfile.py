"""Task files without a server: every problem names the file and its line, and a good file becomes exactly the
request body the API takes (ladder_cli.taskfile)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import attrs
import jsonschema
import pytest
from ladder_cli import taskfile
from ladder_cli.errors import USAGE, CliError
from ladder_cli.main import app
from ladder_sdk.models.allocation_request_request import AllocationRequestRequest
from ladder_sdk.models.workload_request import WorkloadRequest
from typer.testing import CliRunner

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "cli" / "examples").glob("*.yaml"))
MINE = {"ssh_keys": {"demo": 1, "laptop": 4}, "volumes": {"datasets": 7}}
HEAD = "name: lab\nrung: container\ngpu_model: H100-SXM-80GB\n"


def problems(text: str) -> list[str]:
    return taskfile.problems(taskfile.load(text, "task.yaml"))


def refusal(text: str) -> taskfile.TaskFileError:
    with pytest.raises(taskfile.TaskFileError) as caught:
        taskfile.check(taskfile.load(text, "task.yaml"))
    assert caught.value.exit_code == USAGE
    return caught.value


def body(text: str, names: Mapping[str, Mapping[str, int]] = MINE) -> dict[str, object]:
    return taskfile.request_body(taskfile.check(taskfile.load(text, "task.yaml")), lambda kind: names[kind])


# --- problems, by line ----------------------------------------------------------------------------------------


def test_a_bad_value_names_the_file_its_line_and_the_field() -> None:
    error = refusal(HEAD + "image: nvcr.io/nvidia/pytorch:25.01-py3\ngpus: 12\n")
    assert error.line() == "ladder: task.yaml:5: gpus: 12 is greater than the maximum of 8"


def test_an_unknown_key_names_its_line_and_the_key_it_is_closest_to() -> None:
    assert problems("name: lab\nrung: container\ngpu_modle: H100-SXM-80GB\ngpus: 1\n") == [
        "task.yaml:1: missing: give one of gpu_model, gpu_models",
        "task.yaml:3: gpu_modle: unknown key (did you mean gpu_model?)",
    ]
    nested = HEAD + "gpus: 1\nvolumes:\n  - volume: datasets\n    mount_path: /data\n    read_onyl: true\n"
    assert problems(nested) == ["task.yaml:8: volumes.0.read_onyl: unknown key (did you mean read_only?)"]


def test_a_yaml_syntax_error_names_its_line() -> None:
    error = refusal(HEAD + "gpus: 1\n  image: x\n")
    assert error.line() == "ladder: task.yaml:5: not valid YAML: mapping values are not allowed here"
    unclosed = refusal(HEAD + 'gpus: 1\ncommand: "python\n')
    assert unclosed.line().startswith("ladder: task.yaml:6: not valid YAML: while scanning a quoted scalar (begun on")


def test_every_problem_is_one_line_in_the_order_of_the_file() -> None:
    text = (
        "name: lab\nrung: contaner\ngpu_model: H100-SXM-80GB\ngpus: 1\n"
        "ports:\n  - port: 8888\n    expose: publik\n  - port: 99999\n"
        "share: {mode: mps, fraction: 1.5}\ngang: {size: 2, topology: mesh}\ncheckpoint:\n  interval_s: 5\n"
        "secrets:\n  - as: file\ncommand: 5\n"
    )
    assert problems(text) == [
        "task.yaml:2: rung: 'contaner' is not one of "
        "['bare_metal', 'vm', 'confidential_vm', 'container', 'job', 'serverless']",
        "task.yaml:7: ports.0.expose: 'publik' is not one of ['none', 'tenant', 'public']",
        "task.yaml:8: ports.1.port: 99999 is greater than the maximum of 65535",
        "task.yaml:9: share.fraction: 1.5 is greater than the maximum of 0.999",
        "task.yaml:9: gpus, share: give only one of gpus, mig_profile, share, nodes",
        "task.yaml:10: gang.topology: 'mesh' is not one of ['nvlink']",
        "task.yaml:12: checkpoint.interval_s: 5 is less than the minimum of 30",
        "task.yaml:14: secrets.0.name: missing (required)",
        "task.yaml:15: command: 5 is not of type 'string' or 'array'",
    ]


def test_many_problems_show_the_first_ten_and_count_the_rest() -> None:
    text = HEAD + "gpus: 1\nports:\n" + "".join(f"  - port: {70000 + i}\n" for i in range(12))
    shown = refusal(text).line().splitlines()
    assert len(shown) == 11
    assert shown[0] == "ladder: task.yaml:6: ports.0.port: 70000 is greater than the maximum of 65535"
    assert shown[-1] == "ladder: ... and 2 more"


def test_a_key_given_twice_is_refused_at_its_second_line() -> None:
    assert problems(HEAD + "gpus: 1\nimage: a\ngpus: 2\n") == ["task.yaml:6: gpus: given twice (first on line 4)"]


def test_a_tag_yaml_cannot_build_safely_or_a_loop_is_refused_at_its_line() -> None:
    error = refusal(HEAD + "gpus: 1\nimage: !!python/name:os.system ''\n")
    assert error.line().startswith("ladder: task.yaml:5: not valid YAML: could not determine a constructor")
    assert "task.yaml:5: args.0: refers to itself" in problems(HEAD + "gpus: 1\nargs: &a [*a]\n")


def test_a_file_that_is_not_a_mapping_or_is_empty_or_missing_is_bad_usage(tmp_path: Path) -> None:
    assert problems("- name: lab\n") == ["task.yaml:1: a task file is a mapping of keys: name, rung, ..."]
    assert refusal("# nothing\n").line().startswith("ladder: task.yaml: empty:")
    with pytest.raises(CliError) as caught:
        taskfile.read(str(tmp_path / "absent.yaml"))
    assert caught.value.exit_code == USAGE
    assert "cannot read the task file" in caught.value.line()


# --- the request body -----------------------------------------------------------------------------------------


def test_the_request_keeps_its_fields_at_the_top_and_the_workload_goes_under_workload() -> None:
    text = (
        "name: train\nrung: job\ngpu_model: H100-SXM-80GB\ngpus: 8\nregions: [eu-west]\n"
        "gang: {size: 2, topology: nvlink}\nframework: mpi\nimage: ghcr.io/acme/train:1\n"
        "command: [python, train.py]\ncheckpoint: {path: /ckpt, interval_s: 600}\n"
    )
    assert body(text) == {
        "name": "train",
        "rung": "job",
        "gpu_model": "H100-SXM-80GB",
        "gpus": 8,
        "regions": ["eu-west"],
        "gang": {"size": 2, "topology": "nvlink"},
        "workload": {
            "framework": "mpi",
            "image": "ghcr.io/acme/train:1",
            "command": ["python", "train.py"],
            "checkpoint": {"path": "/ckpt", "interval_s": 600},
        },
    }
    assert "workload" not in body(HEAD + "gpus: 1\n")  # the capacity alone


def test_command_and_args_as_one_string_are_split_as_a_shell_would() -> None:
    got = body(HEAD + 'gpus: 1\ncommand: python -c \'print("a b")\'\nargs: --name "my run" --steps=3\n')
    assert got["workload"] == {"command": ["python", "-c", 'print("a b")'], "args": ["--name", "my run", "--steps=3"]}
    with pytest.raises(taskfile.TaskFileError) as caught:
        body(HEAD + "gpus: 1\n\ncommand: python 'unclosed\n")
    assert caught.value.line() == "ladder: task.yaml:6: command: cannot be split as a shell would: No closing quotation"


def test_env_as_a_mapping_becomes_name_value_pairs_with_values_as_written() -> None:
    got = body(HEAD + "gpus: 1\nenv:\n  MODEL: llama-3-8b\n  LAB: yes\n  VERSION: 1.10\n  WORKERS: 8\n  DEBUG: false\n")
    assert got["workload"] == {
        "env": [
            {"name": "MODEL", "value": "llama-3-8b"},
            {"name": "LAB", "value": "yes"},
            {"name": "VERSION", "value": "1.10"},
            {"name": "WORKERS", "value": "8"},
            {"name": "DEBUG", "value": "false"},
        ]
    }
    as_list = body(HEAD + "gpus: 1\nenv:\n  - {name: A, value: '1'}\n")
    assert as_list["workload"] == {"env": [{"name": "A", "value": "1"}]}


def test_ssh_keys_and_volumes_named_become_ids_asking_once_per_kind() -> None:
    asked: list[str] = []

    def names(kind: str) -> Mapping[str, int]:
        asked.append(kind)
        return MINE[kind]

    text = (
        HEAD + "gpus: 1\nssh_keys: [demo, laptop, 9]\nvolumes:\n  - {volume: datasets, mount_path: /data}\n"
        "  - {volume: 3, mount_path: /more, read_only: true}\n  - {scratch_gb: 10, mount_path: /scratch}\n"
    )
    got = taskfile.request_body(taskfile.check(taskfile.load(text, "task.yaml")), names)
    assert got["workload"] == {
        "ssh_keys": [1, 4, 9],
        "volumes": [
            {"volume": 7, "mount_path": "/data"},
            {"volume": 3, "mount_path": "/more", "read_only": True},
            {"scratch_gb": 10, "mount_path": "/scratch"},
        ],
    }
    assert asked == ["ssh_keys", "volumes"]
    ids_only = HEAD + "gpus: 1\nssh_keys: [1]\nvolumes:\n  - {volume: 3, mount_path: /d}\n"
    taskfile.request_body(taskfile.check(taskfile.load(ids_only, "task.yaml")), names)
    assert asked == ["ssh_keys", "volumes"]  # ids need no lookup


def test_a_model_cache_named_becomes_the_volumes_id() -> None:
    text = (
        "name: llm\nrung: serverless\ngpu_model: H100-SXM-80GB\ngpus: 1\nimage: ghcr.io/acme/llm:1.0\n"
        "volumes:\n  - {volume: datasets, mount_path: /models, read_only: true}\n"
        "model: {size_gb: 13.5, volume: datasets}\n"
    )
    got = taskfile.request_body(taskfile.check(taskfile.load(text, "task.yaml")), lambda kind: MINE[kind])
    assert got["workload"]["model"] == {"size_gb": 13.5, "volume": 7}
    assert got["workload"]["volumes"] == [{"volume": 7, "mount_path": "/models", "read_only": True}]
    unknown = text.replace("volume: datasets}", "volume: weights}")
    with pytest.raises(taskfile.TaskFileError) as caught:
        taskfile.request_body(taskfile.check(taskfile.load(unknown, "task.yaml")), lambda kind: MINE[kind])
    assert caught.value.line() == (
        "ladder: task.yaml:8: model.volume: you have no volume named 'weights' "
        "(yours: datasets; `ladder volumes` lists them)"
    )


def test_an_unknown_name_is_bad_usage_naming_its_line_and_yours() -> None:
    text = HEAD + "gpus: 1\nssh_keys:\n  - demo\n  - desktop\nvolumes:\n  - {volume: models, mount_path: /m}\n"
    with pytest.raises(taskfile.TaskFileError) as caught:
        body(text)
    assert caught.value.exit_code == USAGE
    assert caught.value.line().splitlines() == [
        "ladder: task.yaml:7: ssh_keys.1: you have no SSH key named 'desktop' "
        "(yours: demo, laptop; `ladder ssh-keys` lists them)",
        "ladder: task.yaml:9: volumes.0.volume: you have no volume named 'models' "
        "(yours: datasets; `ladder volumes` lists them)",
    ]


def test_a_share_fraction_written_as_a_number_is_sent_as_the_decimal_string_written() -> None:
    text = "name: chat\nrung: serverless\ngpu_model: H100-SXM-80GB\nshare:\n  mode: mps\n  fraction: 0.250\n"
    assert body(text)["share"] == {"mode": "mps", "fraction": "0.250"}
    quoted = text.replace("0.250", "'0.5'")
    assert body(quoted)["share"] == {"mode": "mps", "fraction": "0.5"}


# --- the schema and the examples ------------------------------------------------------------------------------


def test_the_fields_split_as_the_api_splits_them() -> None:
    """The request's own fields stay on top, every other field is the workload's: as the SDK's models say."""
    request = {field.name for field in attrs.fields(AllocationRequestRequest)} - {"additional_properties"}
    workload = {field.name for field in attrs.fields(WorkloadRequest)} - {"additional_properties"}
    assert set(taskfile.REQUEST_FIELDS) == request - {"workload"}
    assert set(taskfile.schema()["properties"]) == set(taskfile.REQUEST_FIELDS) | workload


def test_the_schema_is_json_schema_2020_12_and_the_command_prints_it() -> None:
    schema = taskfile.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    done = CliRunner().invoke(app, ["task-schema"])
    assert done.exit_code == 0
    assert json.loads(done.stdout) == schema


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_every_example_task_file_is_valid_and_is_what_the_sdk_sends(example: Path) -> None:
    task = taskfile.check(taskfile.read(str(example)))
    sent = taskfile.request_body(task, lambda kind: MINE[kind])
    assert AllocationRequestRequest.from_dict(sent).to_dict() == sent


def test_the_examples_cover_every_kind_of_launch() -> None:
    assert [path.name for path in EXAMPLES] == ["container.yaml", "job.yaml", "serverless.yaml", "vm.yaml"]
