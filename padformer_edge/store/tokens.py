"""Personal tokens: drawn at random, shown once, stored only as a salted scrypt hash.

A user's token is what they type into the page's login form beside their name. The
database keeps ``scrypt$N$r$p$salt$hash`` (the standard library's ``hashlib.scrypt``,
16 random bytes of salt per user), so a copy of the database (a backup, a support
bundle) gives no one a way in. The cost parameters travel with the hash: raising them
later leaves the stored tokens readable. Comparison is constant-time
(``hmac.compare_digest``); a hash this module did not write never matches.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import secrets

SCHEME = "scrypt"
# 16 MiB of memory and a few tens of milliseconds per check: cheap for a login, dear for
# anyone trying tokens against a stolen database.
N, R, P = 2**14, 8, 1
SALT_BYTES = 16
KEY_BYTES = 32
TOKEN_BYTES = 24  # 32 URL-safe characters, 192 random bits


def new_token() -> str:
    """A fresh personal token (URL-safe, no characters a form or shell would mangle)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _derive(token: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        token.encode(), salt=salt, n=n, r=r, p=p, maxmem=2 * 128 * n * r * p, dklen=KEY_BYTES
    )


def hash_token(token: str) -> str:
    """The stored form of ``token``, with a salt of its own."""
    salt = secrets.token_bytes(SALT_BYTES)
    return f"{SCHEME}${N}${R}${P}${_b64(salt)}${_b64(_derive(token, salt, N, R, P))}"


def token_matches(token: str, stored: str) -> bool:
    """True when ``token`` is the one ``stored`` was made from."""
    try:
        scheme, n, r, p, salt, expected = stored.split("$")
        if scheme != SCHEME:
            return False
        derived = _derive(token, _unb64(salt), int(n), int(r), int(p))
    except ValueError:  # not a hash of this module, or parameters scrypt refuses
        return False
    return hmac.compare_digest(derived, _unb64(expected))


@functools.cache
def decoy() -> str:
    """A hash checked when a name is unknown, so a wrong name costs the same time as a
    wrong token and the answer's timing does not tell which names exist."""
    return hash_token(new_token())
