"""The ``http:`` section of the daemon config, also what ``padformer-edge serve`` runs with.

It lives with the web package (as ``alerts:`` lives with the alerts package) so that the
daemon config can include it without the web package importing the daemon. Binding to
anything but a loopback address without a token is refused here, before a socket opens:
the page shows camera pictures and the retry button changes the outbox.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from padformer_edge.config import StrictModel
from padformer_edge.errors import UserError
from padformer_edge.store.lines import line_name

TOKEN_ENV = "PADFORMER_EDGE_HTTP_TOKEN"
MIN_TOKEN_CHARS = 16


class HttpConfig(StrictModel):
    """Where the operator's page listens, the token it asks for, and extra file roots.

    ``roots`` are folders besides the cameras and the heatmap folder whose files may be
    shown (images moved elsewhere by a archiving job, for example). ``stale_after_beats``
    is when every page turns red: the daemon's last heartbeat is older than this many of
    its heartbeat intervals (3 x 5 s by default), so one late beat is tolerated but a
    stopped or wedged daemon is shown within seconds.
    """

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    token: str | None = Field(None, min_length=MIN_TOKEN_CHARS)
    roots: list[Path] = Field(default_factory=list)
    live_cards: int = Field(24, ge=1, le=200)
    stale_after_beats: float = Field(3.0, ge=1.5, le=100.0)
    tls_cert: Path | None = Field(
        None, description="PEM certificate (chain) to serve HTTPS with; needs tls_key."
    )
    tls_key: Path | None = Field(
        None, description="PEM private key of tls_cert; a renewed pair is taken up live."
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Reverse proxies (addresses or networks) whose X-Forwarded-* is believed.",
    )

    line_urls: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Each line's own page (line name: http(s) URL), linked from the plant view for "
            "pictures kept on that line's PC."
        ),
    )

    @field_validator("line_urls")
    @classmethod
    def _line_urls(cls, value: dict[str, str]) -> dict[str, str]:
        checked = {}
        for line, url in value.items():
            try:
                name = line_name(line)
            except UserError as err:
                raise ValueError(str(err)) from err
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(
                    f"line_urls: '{url}' for line {name} is not an http(s) URL; write e.g. "
                    "https://press-1.plant.example:8080"
                )
            checked[name] = url.rstrip("/")
        return checked

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError as err:
                raise ValueError(
                    f"'{entry}' is not an IP address or network; write e.g. 127.0.0.1 or 10.0.0.0/8"
                ) from err
        return value

    @model_validator(mode="after")
    def _tls_pair(self) -> HttpConfig:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together; set both or neither")
        return self


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``: only this machine can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def effective_token(config: HttpConfig) -> str | None:
    """``$PADFORMER_EDGE_HTTP_TOKEN`` wins over the config, so a secret can stay out of YAML."""
    token = os.environ.get(TOKEN_ENV) or config.token
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise UserError(
            f"${TOKEN_ENV} is shorter than {MIN_TOKEN_CHARS} characters; "
            "use a longer random token, e.g. from 'openssl rand -hex 16'."
        )
    return token


def require_token_off_loopback(config: HttpConfig, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token every request must carry."""
    if token is None and not is_loopback(config.host):
        raise UserError(
            f"the web page would listen on {config.host}, reachable from other machines, "
            f"without a token; set http.token or ${TOKEN_ENV}, or bind to 127.0.0.1."
        )
