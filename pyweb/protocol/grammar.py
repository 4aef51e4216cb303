"""The HTTP/1.1 grammar as compiled regular expressions (RFC 9110 §5, RFC 9112 §3, §5, §7).

Each pattern sits next to the ABNF it implements, quoted from the RFC, so a reader can
check one against the other. Where pyweb's pattern deliberately differs from the ABNF the
comment says so and why (the same leniencies h11 has, for the same reasons).

The patterns work on ``str`` decoded as Latin-1 (one character per byte), because the
parser decodes the whole request head once and then runs a handful of C-level regex calls
over it; see ``parser.py``. All of them are compiled at import time.
"""

from __future__ import annotations

import re

__all__ = [
    "TCHAR",
    "TOKEN",
    "REQUEST_LINE",
    "HTTP_VERSION_LOOSE",
    "FIELD_LINE",
    "ABSOLUTE_FORM",
    "AUTHORITY_FORM",
    "HOST",
    "DIGITS",
    "CHUNK_LINE",
    "BARE_LF",
]

# RFC 9110 §5.6.2:
#   token          = 1*tchar
#   tchar          = "!" / "#" / "$" / "%" / "&" / "'" / "*"
#                  / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
#                  / DIGIT / ALPHA
#                  ; any VCHAR, except delimiters
TCHAR = r"[-!#$%&'*+.^_`|~0-9A-Za-z]"
TOKEN = re.compile(TCHAR + "+")

# RFC 5234 B.1:  VCHAR = %x21-7E
_VCHAR = r"[\x21-\x7e]"

# RFC 9112 §3:
#   request-line   = method SP request-target SP HTTP-version
#   method         = token                                  (RFC 9110 §9.1)
# RFC 9112 §2.3:
#   HTTP-version   = HTTP-name "/" DIGIT "." DIGIT
#   HTTP-name      = %s"HTTP"
# RFC 9112 §3.2: request-target = origin-form / absolute-form / authority-form / asterisk-form
#
# The target is matched here only as "1*VCHAR" (no spaces, no controls, no obs-text);
# which of the four forms it is gets decided afterwards by looking at its first character,
# because that gives clearer error messages than one big alternation. Like h11, pyweb does
# not insist that every character of a target is one RFC 3986 allows (browsers send "|",
# "{", "}" unescaped); what matters for framing is that it contains no whitespace.
REQUEST_LINE = re.compile(
    rf"({TCHAR}+) ({_VCHAR}+) HTTP/([0-9])\.([0-9])"
)

# Used only to explain why a request line failed: a version that *looks* like HTTP with
# another major version ("HTTP/2.0", "HTTP/3") earns 505 instead of 400 (RFC 9110 §15.6.6).
HTTP_VERSION_LOOSE = re.compile(r"HTTP/([0-9]+)(?:\.([0-9]+))?")

# RFC 9112 §5:
#   field-line     = field-name ":" OWS field-value OWS
# RFC 9110 §5.1, §5.5, §5.6.3:
#   field-name     = token
#   field-value    = *field-content
#   field-content  = field-vchar [ 1*( SP / HTAB / field-vchar ) field-vchar ]
#   field-vchar    = VCHAR / obs-text
#   obs-text       = %x80-FF
#   OWS            = *( SP / HTAB )
#
# Differences from the ABNF:
# * none for control characters: RFC 9110 §5.5 lets a recipient reject a field value with
#   CTLs other than HTAB, and pyweb does (400). h11 admits the CTLs other than NUL, CR and
#   LF (some clients put \x01 in cookies); pyweb used to follow it, and a
#   hardening probe then found \x01 accepted where the RFC's grammar has no room for it.
#   NUL, CR and LF are the dangerous ones (request smuggling, header injection).
# * obs-fold (a line starting with SP/HTAB continuing the previous one) is not part of
#   this pattern: RFC 9112 §5.2 lets a server reject it with 400, which pyweb does.
_FIELD_VCHAR = r"[^\x00-\x20\x7f]"  # VCHAR / obs-text: no CTL, no SP, no HTAB
_FIELD_VALUE = rf"(?:{_FIELD_VCHAR}+(?:[ \t]+{_FIELD_VCHAR}+)*)?"
_OWS = r"[ \t]*"

# One field line, groups: name, value (without the surrounding OWS).
FIELD_LINE = re.compile(rf"({TCHAR}+):{_OWS}({_FIELD_VALUE}){_OWS}")

# The parser's fast path does not run FIELD_LINE on every line: it checks the forbidden
# characters over the whole block at once and the names through a cache of names that
# have passed this pattern before (see parser._parse_fields); FIELD_LINE remains the
# definition, and every new name or suspicious line goes through it.

# RFC 9112 §3.2.2:  absolute-form = absolute-URI                  (RFC 3986 §4.3)
#   absolute-URI  = scheme ":" hier-part [ "?" query ]
#   scheme        = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
#   hier-part     = "//" authority path-abempty / ...
# pyweb accepts the "//" authority kind only (the only one with a host to serve);
# groups: scheme, authority, rest (path-abempty [ "?" query ]).
ABSOLUTE_FORM = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#]*)(.*)", re.DOTALL)

# RFC 9112 §3.2.3:  authority-form = uri-host ":" port   (only for CONNECT)
AUTHORITY_FORM = re.compile(r"[^/?#@]+:[0-9]*")

# RFC 9110 §7.2:   Host = uri-host [ ":" port ]
# RFC 3986 §3.2.2: host = IP-literal / IPv4address / reg-name
#   IP-literal    = "[" ( IPv6address / IPvFuture ) "]"
#   reg-name      = *( unreserved / pct-encoded / sub-delims )
#   unreserved    = ALPHA / DIGIT / "-" / "." / "_" / "~"
#   sub-delims    = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
#   port          = *DIGIT
# (IPv4address is a special case of reg-name; the IP-literal is checked for its
# alphabet only, not for being a well-formed IPv6 address.) An empty Host is valid: RFC
# 9110 §7.2 has clients send it when the target URI has no authority.
HOST = re.compile(
    r"(?:\[[0-9A-Za-z:._~!$&'()*+,;=\-]+\]|[0-9A-Za-z\-._~%!$&'()*+,;=]*)(?::[0-9]*)?"
)

# RFC 9110 §8.6:  Content-Length = 1*DIGIT
DIGITS = re.compile(r"[0-9]+")

# RFC 9112 §7.1, §7.1.1:
#   chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
#   chunk-size     = 1*HEXDIG
#   last-chunk     = 1*("0") [ chunk-ext ] CRLF
#   chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
#   BWS            = OWS              (RFC 9110 §5.6.3, "bad" whitespace: must be accepted)
# pyweb, like h11, reads at most 20 hex digits (more cannot be a sane size) and accepts
# anything after ";" except NUL/CR/LF (extensions are ignored: RFC 9112 §7.1.1 "MUST
# ignore unrecognized chunk extensions"). As the ABNF says, BWS *before* the ";" is
# accepted ("5 ;ext"), and whitespace with no extension after it ("5 ") is not: the
# grammar has no place for it (h11 does the opposite on both counts).
# The line is matched as bytes (chunk lines are not decoded); groups: size.
CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:[ \t]*;[^\x00\r\n]*)?")

# A LF not preceded by CR: pyweb requires CRLF line endings (see parser.py and
# docs/protocol.md), and uses this to reject an LF-only head at once instead of waiting
# for a CRLF CRLF that will never come.
BARE_LF = re.compile(rb"(?<!\r)\n")
