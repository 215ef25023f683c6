"""When a PEM certificate expires, read without a cryptography library.

``doctor`` warns ``RENEW_WITHIN_DAYS`` before the page's certificate runs out, which needs
one date out of the certificate. Python's ``ssl`` module can serve a certificate but not
read one back, and a full X.509 library would be the line install's largest dependency
for one field, so this walks the DER encoding just as far as ``notAfter``: Certificate
→ tbsCertificate → [version], serialNumber, signature, issuer, validity → notAfter.
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime
from pathlib import Path

from padformer_edge.errors import UserError

RENEW_WITHIN_DAYS = 14
_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----\s*(.+?)\s*-----END CERTIFICATE-----", re.DOTALL)
_SEQUENCE, _VERSION, _UTC_TIME, _GENERALIZED_TIME = 0x30, 0xA0, 0x17, 0x18


def _element(der: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at offset ``at``."""
    if at + 2 > len(der):
        raise ValueError("truncated element")
    tag, length = der[at], der[at + 1]
    start = at + 2
    if length & 0x80:  # long form: the next (length & 0x7F) bytes hold the length
        count = length & 0x7F
        if count == 0 or count > 4 or start + count > len(der):
            raise ValueError("bad length")
        length = int.from_bytes(der[start : start + count], "big")
        start += count
    if start + length > len(der):
        raise ValueError("truncated content")
    return tag, start, start + length


def _time(tag: int, text: str) -> datetime:
    if tag == _UTC_TIME:  # YYMMDDHHMMSSZ; years 50-99 are the 1900s (RFC 5280)
        year = int(text[:2])
        text = f"{1900 + year if year >= 50 else 2000 + year}{text[2:]}"
    elif tag != _GENERALIZED_TIME:
        raise ValueError("notAfter is not a time")
    return datetime.strptime(text, "%Y%m%d%H%M%SZ").replace(tzinfo=UTC)


def not_after(der: bytes) -> datetime:
    """The ``notAfter`` time of one DER-encoded certificate."""
    tag, start, _ = _element(der, 0)  # Certificate
    if tag != _SEQUENCE:
        raise ValueError("not a certificate")
    tag, at, _ = _element(der, start)  # tbsCertificate
    if tag != _SEQUENCE:
        raise ValueError("not a certificate")
    tag, _, end = _element(der, at)
    if tag == _VERSION:
        at = end
    for _field in range(3):  # serialNumber, signature, issuer
        _, _, at = _element(der, at)
    tag, at, _ = _element(der, at)  # validity
    if tag != _SEQUENCE:
        raise ValueError("no validity")
    _, _, at = _element(der, at)  # notBefore
    tag, start, end = _element(der, at)
    return _time(tag, der[start:end].decode("ascii"))


def expiry(path: Path) -> datetime:
    """When the first certificate of the PEM file ``path`` (the server's own, in a chain)
    expires; one sentence naming the file when it cannot be read."""
    try:
        found = _PEM.search(path.read_bytes())
        if found is None:
            raise ValueError("no PEM certificate in it")
        return not_after(base64.b64decode(found.group(1), validate=False))
    except (OSError, ValueError) as err:
        raise UserError(
            f"certificate {path} cannot be read ({err}); give a PEM certificate file."
        ) from err
