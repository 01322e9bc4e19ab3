from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.offering_class import OfferingClass
    from ..models.offering_host import OfferingHost
    from ..models.offering_mig_profiles import OfferingMigProfiles
    from ..models.offering_performance_words import OfferingPerformanceWords
    from ..models.offering_prices import OfferingPrices


T = TypeVar("T", bound="Offering")


@_attrs_define
class Offering:
    """
    Attributes:
        rung (str):
        gpu_model (str):
        region (str):
        performance_isolation (list[str]):
        security_isolation (str):
        unit (str):
        mig_profiles (OfferingMigProfiles): Profile -> slices placeable now.
        available (int): Free now, in the rung's unit (GPUs, or nodes for bare metal).
        sovereign_available (int): Free now in halls fenced for sovereign tenants.
        prices (OfferingPrices): Price per unit-hour now, by unit: "gpu", "node" or "mig:<profile>" (empty: not priced
            yet).
        currency (None | str):
        classes (list[OfferingClass]): Each capacity class sold here, with its prices and promise (on demand is
            `prices`).
        host (None | OfferingHost): vCPUs and memory sold with the GPUs; null on bare metal.
        performance_words (OfferingPerformanceWords): Each performance isolation in plain words (how the GPU is shared),
            as the portal says it.
        security_words (str): The security isolation in plain words (what separates your work from other tenants').
    """

    rung: str
    gpu_model: str
    region: str
    performance_isolation: list[str]
    security_isolation: str
    unit: str
    mig_profiles: OfferingMigProfiles
    available: int
    sovereign_available: int
    prices: OfferingPrices
    currency: None | str
    classes: list[OfferingClass]
    host: None | OfferingHost
    performance_words: OfferingPerformanceWords
    security_words: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.offering_host import OfferingHost

        rung = self.rung

        gpu_model = self.gpu_model

        region = self.region

        performance_isolation = self.performance_isolation

        security_isolation = self.security_isolation

        unit = self.unit

        mig_profiles = self.mig_profiles.to_dict()

        available = self.available

        sovereign_available = self.sovereign_available

        prices = self.prices.to_dict()

        currency: None | str
        currency = self.currency

        classes = []
        for classes_item_data in self.classes:
            classes_item = classes_item_data.to_dict()
            classes.append(classes_item)

        host: dict[str, Any] | None
        if isinstance(self.host, OfferingHost):
            host = self.host.to_dict()
        else:
            host = self.host

        performance_words = self.performance_words.to_dict()

        security_words = self.security_words

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "rung": rung,
                "gpu_model": gpu_model,
                "region": region,
                "performance_isolation": performance_isolation,
                "security_isolation": security_isolation,
                "unit": unit,
                "mig_profiles": mig_profiles,
                "available": available,
                "sovereign_available": sovereign_available,
                "prices": prices,
                "currency": currency,
                "classes": classes,
                "host": host,
                "performance_words": performance_words,
                "security_words": security_words,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.offering_class import OfferingClass
        from ..models.offering_host import OfferingHost
        from ..models.offering_mig_profiles import OfferingMigProfiles
        from ..models.offering_performance_words import OfferingPerformanceWords
        from ..models.offering_prices import OfferingPrices

        d = dict(src_dict)
        rung = d.pop("rung")

        gpu_model = d.pop("gpu_model")

        region = d.pop("region")

        performance_isolation = cast(list[str], d.pop("performance_isolation"))

        security_isolation = d.pop("security_isolation")

        unit = d.pop("unit")

        mig_profiles = OfferingMigProfiles.from_dict(d.pop("mig_profiles"))

        available = d.pop("available")

        sovereign_available = d.pop("sovereign_available")

        prices = OfferingPrices.from_dict(d.pop("prices"))

        def _parse_currency(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        currency = _parse_currency(d.pop("currency"))

        classes = []
        _classes = d.pop("classes")
        for classes_item_data in _classes:
            classes_item = OfferingClass.from_dict(classes_item_data)

            classes.append(classes_item)

        def _parse_host(data: object) -> None | OfferingHost:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                host_type_1 = OfferingHost.from_dict(data)

                return host_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OfferingHost, data)

        host = _parse_host(d.pop("host"))

        performance_words = OfferingPerformanceWords.from_dict(d.pop("performance_words"))

        security_words = d.pop("security_words")

        offering = cls(
            rung=rung,
            gpu_model=gpu_model,
            region=region,
            performance_isolation=performance_isolation,
            security_isolation=security_isolation,
            unit=unit,
            mig_profiles=mig_profiles,
            available=available,
            sovereign_available=sovereign_available,
            prices=prices,
            currency=currency,
            classes=classes,
            host=host,
            performance_words=performance_words,
            security_words=security_words,
        )

        offering.additional_properties = d
        return offering

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
