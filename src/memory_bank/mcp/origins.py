"""Which ``Host`` and ``Origin`` headers ``/mcp`` answers (DNS-rebinding protection).

A page on ``evil.example.com`` whose name an attacker re-points at 127.0.0.1 makes
the victim's browser talk to a local server while sending ``Host: evil.example.com``
and ``Origin: http://evil.example.com``; the name, not the address, gives it away.
So ``/mcp`` answers only requests addressed to the public URL (its host and port)
and, in development, to a loopback name on any port (a local server is reached as
``localhost:<port>`` or through a local proxy). A missing ``Origin`` is a
non-browser client and passes; ``Origin: null`` (a sandboxed page) does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class _Authority:
    host: str
    port: int | None


def _authority(url: str, default_port: int | None) -> tuple[str, _Authority] | None:
    """Scheme, host and port of ``url`` when it is nothing more than that (no user, path or query)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a bad IPv6 literal, a port that is not a number or out of range
        return None
    if parts.username is not None or parts.password is not None or parts.path or parts.query or parts.fragment:
        return None
    if not parts.hostname or parts.netloc.endswith(":"):
        return None
    return parts.scheme.lower(), _Authority(parts.hostname, default_port if port is None else port)


class AllowedOrigins:
    """The policy for one deployment: its public URL, and whether loopback names pass too."""

    def __init__(self, public_url: str, *, allow_loopback: bool) -> None:
        scheme = urlsplit(public_url).scheme.lower()
        public = _authority(public_url.rstrip("/"), DEFAULT_PORTS.get(scheme))
        if public is None:
            raise ValueError(f"the public URL {public_url!r} has no usable host")
        self._scheme, self._public = public
        self._allow_loopback = allow_loopback

    def host_allowed(self, host: str | None) -> bool:
        """``Host`` (``name[:port]``) names this service; its scheme is the public URL's."""
        if not host:
            return False
        found = _authority("//" + host, DEFAULT_PORTS.get(self._scheme))
        return found is not None and self._names_us(self._scheme, found[1])

    def origin_allowed(self, origin: str | None) -> bool:
        """``Origin`` (``scheme://name[:port]``) is absent, or names this service."""
        if origin is None:
            return True
        scheme = origin.partition(":")[0].lower()
        if scheme not in DEFAULT_PORTS:  # also ``null``, sent by sandboxed and file pages
            return False
        found = _authority(origin, DEFAULT_PORTS[scheme])
        return found is not None and self._names_us(*found)

    def _names_us(self, scheme: str, authority: _Authority) -> bool:
        if self._allow_loopback and authority.host in LOOPBACK_NAMES:
            return True
        return scheme == self._scheme and authority == self._public
