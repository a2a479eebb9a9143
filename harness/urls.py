"""Endpoint URLs: checked before any request, and never shown or stored with a secret.

A base URL can carry credentials: a user and password (``http://user:pw@host/v1``) or a
key in its query (``?api-key=…``, ``?sig=…``). The password form is refused when the
URL is checked (the key belongs in the key option or its variable, which never leave
memory); a secret-looking query parameter is allowed (some gateways want one) but its
value is masked by :func:`redact_url` wherever a URL is stored or shown: the store,
prediction and verdict keys, results, error messages. Standard library only.
"""

from __future__ import annotations

import re
import urllib.parse

#: What a masked secret reads as.
MASK = "***"

# ``scheme://userinfo@``: everything before the first ``@`` of the authority.
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^@/?#]*)@")
# One ``name=value`` of a query or fragment.
_PARAM = re.compile(r"([?&;#])([^=&;#]*)=([^&;#]*)")
# Parameter names whose value is a credential (matched after splitting camelCase words,
# lower-casing and turning ``-`` into ``_``): ``key``, ``api_key``, ``subscription_key``,
# ``access_token`` (``accessToken``), ``sig``, ``x_amz_signature``, ``client_secret``,
# ``password``, ``code`` (Azure Functions) …
_SECRET_NAME = re.compile(r"(^|_)(key|apikey|token|secret|password|passwd|pwd|pass|sig|"
                          r"signature|auth|authorization|credential|credentials|code)$")


# A lower-case letter or digit followed by a capital: where camelCase starts a word.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _secret_param(name: str) -> bool:
    # accessToken and subscriptionKey are access_token and subscription_key.
    words = _CAMEL.sub("_", urllib.parse.unquote(name).strip())
    return bool(_SECRET_NAME.search(words.lower().replace("-", "_")))


def redact_url(url: str) -> str:
    """``url`` with its credentials masked: the password of a ``user:password@`` (the
    whole user part when there is no password: it is often a token) and the values of
    secret-looking query parameters. A URL without them comes back unchanged, so what
    is keyed on it stays the same; masking twice changes nothing more."""
    text = str(url)

    def userinfo(match: re.Match[str]) -> str:
        user, sep, _ = match.group(2).partition(":")
        return f"{match.group(1)}{user}:{MASK}@" if sep else f"{match.group(1)}{MASK}@"

    def param(match: re.Match[str]) -> str:
        lead, name, _ = match.groups()
        return f"{lead}{name}={MASK}" if _secret_param(name) else match.group(0)

    return _PARAM.sub(param, _USERINFO.sub(userinfo, text, count=1))


def url_secrets(url: str) -> list[str]:
    """The secrets :func:`redact_url` masks in ``url``, as written and percent-decoded,
    to remove them from any text that might quote them (an error from a library)."""
    found: list[str] = []
    match = _USERINFO.match(str(url))
    if match:
        user, sep, password = match.group(2).partition(":")
        found.append(password if sep else user)
    found += [value for _, name, value in _PARAM.findall(str(url)) if _secret_param(name)]
    both = found + [urllib.parse.unquote(s) for s in found]
    # Longest first, so a secret that contains another is masked whole.
    return sorted({s for s in both if len(s) >= 3}, key=len, reverse=True)


#: The fewest characters of a secret's start masked at the end of a text: fewer say
#: little of a secret, and are often words of their own ("token", "test").
MIN_CUT = 8


def redact_text(text: str, url: str, *secrets: str) -> str:
    """``text`` with every secret of ``url`` masked, and ``secrets`` (an API key) too.

    Give it the whole text, before it is shortened or rewritten: only a whole secret is
    found, or the start of one that ends the text (at least ``MIN_CUT`` characters of
    it), which is what a text cut short before it came here leaves, such as an error
    body kept to its first characters.
    """
    found = sorted({form for s in (*secrets, *url_secrets(url)) if s for form in _forms(s)},
                   key=len, reverse=True)
    for secret in found:  # longest first, so a secret that contains another goes whole
        text = text.replace(secret, MASK)
    cut = min((_cut_start(text, secret) for secret in found), default=len(text))
    return text if cut == len(text) else text[:cut] + MASK


def _forms(secret: str) -> set[str]:
    """``secret`` and the forms a server may quote it in: JSON with its slashes escaped
    (``\\/``), percent-encoded (``%2F``, ``+`` for a space)."""
    return {secret, secret.replace("/", "\\/"), urllib.parse.quote(secret, safe=""),
            urllib.parse.quote_plus(secret, safe="")}


def _cut_start(text: str, secret: str) -> int:
    """Where the longest start of ``secret`` (``MIN_CUT`` characters or more, not all of
    it) that ends ``text`` begins; ``len(text)`` if none does."""
    end = len(text) - MIN_CUT + 1
    i = text.find(secret[0], max(0, len(text) - len(secret) + 1), end)
    while i != -1 and not secret.startswith(text[i:]):
        i = text.find(secret[0], i + 1, end)
    return len(text) if i == -1 else i


def endpoint_url(url: str, source: str) -> str:
    """``url`` if it is an http(s) URL with a host and no password in it, else a
    ``ConfigError`` naming ``source`` (a config key, a flag or an environment variable)
    and the value, its credentials masked.

    Anything else would only fail at the first request, as a connection error retried
    like a flaky network, and the run would end with every sample pending. A password
    in the URL would be sent as it is and shown wherever the URL is: the key goes in
    the key option instead.
    """
    from .errors import ConfigError

    if not _is_http_url(url):
        raise ConfigError(f"{redact_url(url)!r} is not an http(s) URL with a host; give the "
                          "server's OpenAI-compatible base URL, such as "
                          "http://localhost:8000/v1", field=source)
    if _USERINFO.match(url):
        raise ConfigError(f"{redact_url(url)!r} holds credentials (user:password@); give "
                          "the URL without them and pass the key with --api-key-env "
                          "(or a model's key/api_key_env, judge_cfg's key, "
                          "$OC_JUDGE_API_KEY), which is sent as a bearer token and never "
                          "stored", field=source)
    return url


def _is_http_url(url: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # a port that is not a number raises ValueError
    except ValueError:
        return False
    return (parts.scheme in ("http", "https") and bool(parts.hostname) and port != 0
            and not any(c.isspace() for c in url))
