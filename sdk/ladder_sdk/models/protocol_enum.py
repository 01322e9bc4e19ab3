from enum import StrEnum


class ProtocolEnum(StrEnum):
    HTTP = "http"
    TCP = "tcp"
    UDP = "udp"

    def __str__(self) -> str:
        return str(self.value)
