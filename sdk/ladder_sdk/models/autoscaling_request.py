from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.scaling_signal_enum import ScalingSignalEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="AutoscalingRequest")


@_attrs_define
class AutoscalingRequest:
    """How a serverless endpoint scales (docs/serverless.md, "Autoscaling"). A value left out takes its default;
    reads show every value as applied.

        Attributes:
            min_replicas (int | Unset): Replicas always running: 0 scales to zero once idle; 1 or more never does. Default:
                0.
            max_replicas (int | Unset): The most replicas; default: all placed devices but one, kept for a rollout (one
                device: 1).
            target_in_flight (int | Unset): Requests waiting and in flight per replica that the replicas are scaled to.
                Default: 4.
            scale_up_window_s (int | Unset): Seconds of demand considered before scaling up (0: at once). Default: 0.
            scale_down_window_s (int | Unset): Seconds of lower demand before scaling down. Default: 300.
            idle_seconds (int | Unset): With min_replicas 0: seconds of an empty queue before it goes to zero; default: the
                operator's.
            buffer_replicas (int | Unset): Replicas kept warm beyond demand while the endpoint is active. Default: 0.
            signal (ScalingSignalEnum | Unset): * `queue_depth` - queue_depth
                * `kv_cache` - kv_cache Default: ScalingSignalEnum.QUEUE_DEPTH.
            kv_cache_target (str | Unset): With "signal": "kv_cache": the KV cache use per replica scaled to, a fraction
                above 0 and at most 1 (default 0.8); answered as a decimal string.
    """

    min_replicas: int | Unset = 0
    max_replicas: int | Unset = UNSET
    target_in_flight: int | Unset = 4
    scale_up_window_s: int | Unset = 0
    scale_down_window_s: int | Unset = 300
    idle_seconds: int | Unset = UNSET
    buffer_replicas: int | Unset = 0
    signal: ScalingSignalEnum | Unset = ScalingSignalEnum.QUEUE_DEPTH
    kv_cache_target: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        min_replicas = self.min_replicas

        max_replicas = self.max_replicas

        target_in_flight = self.target_in_flight

        scale_up_window_s = self.scale_up_window_s

        scale_down_window_s = self.scale_down_window_s

        idle_seconds = self.idle_seconds

        buffer_replicas = self.buffer_replicas

        signal: str | Unset = UNSET
        if not isinstance(self.signal, Unset):
            signal = self.signal.value

        kv_cache_target = self.kv_cache_target

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if min_replicas is not UNSET:
            field_dict["min_replicas"] = min_replicas
        if max_replicas is not UNSET:
            field_dict["max_replicas"] = max_replicas
        if target_in_flight is not UNSET:
            field_dict["target_in_flight"] = target_in_flight
        if scale_up_window_s is not UNSET:
            field_dict["scale_up_window_s"] = scale_up_window_s
        if scale_down_window_s is not UNSET:
            field_dict["scale_down_window_s"] = scale_down_window_s
        if idle_seconds is not UNSET:
            field_dict["idle_seconds"] = idle_seconds
        if buffer_replicas is not UNSET:
            field_dict["buffer_replicas"] = buffer_replicas
        if signal is not UNSET:
            field_dict["signal"] = signal
        if kv_cache_target is not UNSET:
            field_dict["kv_cache_target"] = kv_cache_target

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        min_replicas = d.pop("min_replicas", UNSET)

        max_replicas = d.pop("max_replicas", UNSET)

        target_in_flight = d.pop("target_in_flight", UNSET)

        scale_up_window_s = d.pop("scale_up_window_s", UNSET)

        scale_down_window_s = d.pop("scale_down_window_s", UNSET)

        idle_seconds = d.pop("idle_seconds", UNSET)

        buffer_replicas = d.pop("buffer_replicas", UNSET)

        _signal = d.pop("signal", UNSET)
        signal: ScalingSignalEnum | Unset
        if isinstance(_signal, Unset):
            signal = UNSET
        else:
            signal = ScalingSignalEnum(_signal)

        kv_cache_target = d.pop("kv_cache_target", UNSET)

        autoscaling_request = cls(
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            target_in_flight=target_in_flight,
            scale_up_window_s=scale_up_window_s,
            scale_down_window_s=scale_down_window_s,
            idle_seconds=idle_seconds,
            buffer_replicas=buffer_replicas,
            signal=signal,
            kv_cache_target=kv_cache_target,
        )

        autoscaling_request.additional_properties = d
        return autoscaling_request

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
