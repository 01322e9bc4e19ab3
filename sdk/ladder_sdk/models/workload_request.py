from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.framework_enum import FrameworkEnum
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.autoscaling_request import AutoscalingRequest
    from ..models.checkpoint_request import CheckpointRequest
    from ..models.env_request import EnvRequest
    from ..models.port_request import PortRequest
    from ..models.secret_ref_request import SecretRefRequest
    from ..models.volume_request import VolumeRequest
    from ..models.workload_model_request import WorkloadModelRequest


T = TypeVar("T", bound="WorkloadRequest")


@_attrs_define
class WorkloadRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            image (str | Unset): An OCI reference from an allowed registry.
            command (list[str] | Unset):
            args (list[str] | Unset):
            env (list[EnvRequest] | Unset): Plain values; use secrets for anything sensitive.
            secrets (list[SecretRefRequest] | Unset): Names of your secrets (/api/v1/secrets).
            ports (list[PortRequest] | Unset):
            volumes (list[VolumeRequest] | Unset):
            checkpoint (CheckpointRequest | Unset): Refuses, with 422 ``validation_error``, every field of the body it does
                not declare as writable, each
                named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
                with the declared fields' own errors.
            os_image (str | Unset): vm and bare_metal: from the catalog.
            cloud_init (str | Unset):
            ssh_keys (list[int] | Unset): Ids of your SSH keys.
            pull_secret (str | Unset): A secret of yours holding "user:token" for the image's registry.
            framework (FrameworkEnum | Unset): * `torchrun` - torchrun
                * `mpi` - mpi
                * `ray` - ray
                * `slurm` - slurm Default: FrameworkEnum.TORCHRUN.
            autoscaling (AutoscalingRequest | Unset): How a serverless endpoint scales (docs/serverless.md, "Autoscaling").
                A value left out takes its default;
                reads show every value as applied.
            model (WorkloadModelRequest | Unset): Refuses, with 422 ``validation_error``, every field of the body it does
                not declare as writable, each
                named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
                with the declared fields' own errors.
            idle_stop_after (int | None | Unset): Containers, VMs and jobs: stop it after this many minutes with its GPUs
                idle (SM active under 1%), with notice five minutes before (docs/telemetry.md).
    """

    image: str | Unset = UNSET
    command: list[str] | Unset = UNSET
    args: list[str] | Unset = UNSET
    env: list[EnvRequest] | Unset = UNSET
    secrets: list[SecretRefRequest] | Unset = UNSET
    ports: list[PortRequest] | Unset = UNSET
    volumes: list[VolumeRequest] | Unset = UNSET
    checkpoint: CheckpointRequest | Unset = UNSET
    os_image: str | Unset = UNSET
    cloud_init: str | Unset = UNSET
    ssh_keys: list[int] | Unset = UNSET
    pull_secret: str | Unset = UNSET
    framework: FrameworkEnum | Unset = FrameworkEnum.TORCHRUN
    autoscaling: AutoscalingRequest | Unset = UNSET
    model: WorkloadModelRequest | Unset = UNSET
    idle_stop_after: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        image = self.image

        command: list[str] | Unset = UNSET
        if not isinstance(self.command, Unset):
            command = self.command

        args: list[str] | Unset = UNSET
        if not isinstance(self.args, Unset):
            args = self.args

        env: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = []
            for env_item_data in self.env:
                env_item = env_item_data.to_dict()
                env.append(env_item)

        secrets: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.secrets, Unset):
            secrets = []
            for secrets_item_data in self.secrets:
                secrets_item = secrets_item_data.to_dict()
                secrets.append(secrets_item)

        ports: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.ports, Unset):
            ports = []
            for ports_item_data in self.ports:
                ports_item = ports_item_data.to_dict()
                ports.append(ports_item)

        volumes: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.volumes, Unset):
            volumes = []
            for volumes_item_data in self.volumes:
                volumes_item = volumes_item_data.to_dict()
                volumes.append(volumes_item)

        checkpoint: dict[str, Any] | Unset = UNSET
        if not isinstance(self.checkpoint, Unset):
            checkpoint = self.checkpoint.to_dict()

        os_image = self.os_image

        cloud_init = self.cloud_init

        ssh_keys: list[int] | Unset = UNSET
        if not isinstance(self.ssh_keys, Unset):
            ssh_keys = self.ssh_keys

        pull_secret = self.pull_secret

        framework: str | Unset = UNSET
        if not isinstance(self.framework, Unset):
            framework = self.framework.value

        autoscaling: dict[str, Any] | Unset = UNSET
        if not isinstance(self.autoscaling, Unset):
            autoscaling = self.autoscaling.to_dict()

        model: dict[str, Any] | Unset = UNSET
        if not isinstance(self.model, Unset):
            model = self.model.to_dict()

        idle_stop_after: int | None | Unset
        if isinstance(self.idle_stop_after, Unset):
            idle_stop_after = UNSET
        else:
            idle_stop_after = self.idle_stop_after

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if image is not UNSET:
            field_dict["image"] = image
        if command is not UNSET:
            field_dict["command"] = command
        if args is not UNSET:
            field_dict["args"] = args
        if env is not UNSET:
            field_dict["env"] = env
        if secrets is not UNSET:
            field_dict["secrets"] = secrets
        if ports is not UNSET:
            field_dict["ports"] = ports
        if volumes is not UNSET:
            field_dict["volumes"] = volumes
        if checkpoint is not UNSET:
            field_dict["checkpoint"] = checkpoint
        if os_image is not UNSET:
            field_dict["os_image"] = os_image
        if cloud_init is not UNSET:
            field_dict["cloud_init"] = cloud_init
        if ssh_keys is not UNSET:
            field_dict["ssh_keys"] = ssh_keys
        if pull_secret is not UNSET:
            field_dict["pull_secret"] = pull_secret
        if framework is not UNSET:
            field_dict["framework"] = framework
        if autoscaling is not UNSET:
            field_dict["autoscaling"] = autoscaling
        if model is not UNSET:
            field_dict["model"] = model
        if idle_stop_after is not UNSET:
            field_dict["idle_stop_after"] = idle_stop_after

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.autoscaling_request import AutoscalingRequest
        from ..models.checkpoint_request import CheckpointRequest
        from ..models.env_request import EnvRequest
        from ..models.port_request import PortRequest
        from ..models.secret_ref_request import SecretRefRequest
        from ..models.volume_request import VolumeRequest
        from ..models.workload_model_request import WorkloadModelRequest

        d = dict(src_dict)
        image = d.pop("image", UNSET)

        command = cast(list[str], d.pop("command", UNSET))

        args = cast(list[str], d.pop("args", UNSET))

        _env = d.pop("env", UNSET)
        env: list[EnvRequest] | Unset = UNSET
        if _env is not UNSET:
            env = []
            for env_item_data in _env:
                env_item = EnvRequest.from_dict(env_item_data)

                env.append(env_item)

        _secrets = d.pop("secrets", UNSET)
        secrets: list[SecretRefRequest] | Unset = UNSET
        if _secrets is not UNSET:
            secrets = []
            for secrets_item_data in _secrets:
                secrets_item = SecretRefRequest.from_dict(secrets_item_data)

                secrets.append(secrets_item)

        _ports = d.pop("ports", UNSET)
        ports: list[PortRequest] | Unset = UNSET
        if _ports is not UNSET:
            ports = []
            for ports_item_data in _ports:
                ports_item = PortRequest.from_dict(ports_item_data)

                ports.append(ports_item)

        _volumes = d.pop("volumes", UNSET)
        volumes: list[VolumeRequest] | Unset = UNSET
        if _volumes is not UNSET:
            volumes = []
            for volumes_item_data in _volumes:
                volumes_item = VolumeRequest.from_dict(volumes_item_data)

                volumes.append(volumes_item)

        _checkpoint = d.pop("checkpoint", UNSET)
        checkpoint: CheckpointRequest | Unset
        if isinstance(_checkpoint, Unset):
            checkpoint = UNSET
        else:
            checkpoint = CheckpointRequest.from_dict(_checkpoint)

        os_image = d.pop("os_image", UNSET)

        cloud_init = d.pop("cloud_init", UNSET)

        ssh_keys = cast(list[int], d.pop("ssh_keys", UNSET))

        pull_secret = d.pop("pull_secret", UNSET)

        _framework = d.pop("framework", UNSET)
        framework: FrameworkEnum | Unset
        if isinstance(_framework, Unset):
            framework = UNSET
        else:
            framework = FrameworkEnum(_framework)

        _autoscaling = d.pop("autoscaling", UNSET)
        autoscaling: AutoscalingRequest | Unset
        if isinstance(_autoscaling, Unset):
            autoscaling = UNSET
        else:
            autoscaling = AutoscalingRequest.from_dict(_autoscaling)

        _model = d.pop("model", UNSET)
        model: WorkloadModelRequest | Unset
        if isinstance(_model, Unset):
            model = UNSET
        else:
            model = WorkloadModelRequest.from_dict(_model)

        def _parse_idle_stop_after(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        idle_stop_after = _parse_idle_stop_after(d.pop("idle_stop_after", UNSET))

        workload_request = cls(
            image=image,
            command=command,
            args=args,
            env=env,
            secrets=secrets,
            ports=ports,
            volumes=volumes,
            checkpoint=checkpoint,
            os_image=os_image,
            cloud_init=cloud_init,
            ssh_keys=ssh_keys,
            pull_secret=pull_secret,
            framework=framework,
            autoscaling=autoscaling,
            model=model,
            idle_stop_after=idle_stop_after,
        )

        workload_request.additional_properties = d
        return workload_request

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
