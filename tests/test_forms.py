"""pyweb.forms: SMLserver's FormVar (§2.3): getters, wrappers, typed parameters.

Unit tests for every getter and wrapper, and hypothesis properties for the parsers that have
a grammar (naturals, integers, decimal numbers, dates, e-mail addresses).
"""

from __future__ import annotations

import datetime
import enum
import re
import string
from typing import Annotated, Literal, Optional, Union

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from pyweb import forms
from pyweb.app.formdata import MultiDict, UploadedFile
from pyweb.forms import (
    INT_MAX,
    INT_MIN,
    NAT_MAX,
    Date,
    Email,
    FormError,
    FormErrors,
    Nat,
    Real,
    Url,
    check,
    check_signature,
    collect,
    errors,
    get_bool,
    get_date,
    get_email,
    get_enum,
    get_int,
    get_nat,
    get_real,
    get_string,
    get_url,
    getter_for,
    lookup,
    make_getter,
    parse_arguments,
    parse_date,
    parse_email,
    parse_int,
    parse_nat,
    parse_real,
    use_form,
    wrap_exn,
    wrap_fail,
    wrap_opt,
)


def one(getter, text, **options):
    """Run ``getter`` on a form holding ``n=text``."""
    return getter("n", form={"n": text}, **options)


def bad(getter, text, **options) -> FormError:
    with pytest.raises(FormError) as info:
        one(getter, text, **options)
    assert info.value.name == "n"
    assert info.value.value == text
    return info.value


def missing(getter, **options) -> FormError:
    with pytest.raises(FormError) as info:
        getter("n", form={"other": "1"}, **options)
    assert info.value.value is None and info.value.missing
    return info.value


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(enum.Enum):
    SMALL = 1
    LARGE = 2


# ---------------------------------------------------------------------------------------
# Where the form comes from


def test_lookup_last_value_of_a_list_and_of_a_multidict():
    assert lookup("a", {"a": ["1", "2", "3"]}) == "3"
    assert lookup("a", {"a": "x"}) == "x"
    assert lookup("a", {"a": []}) is None
    assert lookup("b", {"a": "x"}) is None
    md = MultiDict([("a", "1"), ("b", "2"), ("a", "3")])
    assert lookup("a", md) == "3"
    assert lookup("zzz", md) is None


def test_getters_use_the_last_value():
    assert get_nat("n", form={"n": ["abc", "5"]}) == 5
    assert get_nat("n", form=MultiDict([("n", "1"), ("n", "7")])) == 7
    # the last value decides even when an earlier one was fine
    with pytest.raises(FormError) as info:
        get_nat("n", form={"n": ["5", "abc"]})
    assert info.value.value == "abc"


def test_current_form_and_use_form_nest_and_restore():
    with pytest.raises(RuntimeError, match="use_form"):
        get_nat("n")
    with use_form({"n": "1"}):
        assert get_nat("n") == 1
        with use_form({"n": "2"}):
            assert get_nat("n") == 2
        assert get_nat("n") == 1
        # an explicit form= bypasses the context
        assert get_nat("n", form={"n": "3"}) == 3
    assert forms.current_form.get() is None


def test_current_form_is_per_trio_task():
    seen: dict[str, int] = {}

    async def page(label: str, value: str) -> None:
        with use_form({"n": value}):
            await trio.sleep(0)  # let the other request run in between
            seen[label] = get_nat("n")

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(page, "a", "1")
            nursery.start_soon(page, "b", "2")

    trio.run(main)
    assert seen == {"a": 1, "b": 2}


def test_a_value_that_is_not_text_is_an_error_not_a_crash():
    md = MultiDict([("n", UploadedFile("x.txt", "text/plain", b"12"))])
    with pytest.raises(FormError) as info:
        get_nat("n", form=md)
    value = info.value.value
    assert value is not None and value.startswith("<not text: UploadedFile('x.txt'")
    with pytest.raises(FormError, match="not text: 3"):
        get_nat("n", form={"n": 3})


# ---------------------------------------------------------------------------------------
# Errors and their messages


def test_form_error_message_names_variable_value_and_expected():
    e = bad(get_nat, "-3")
    assert e.expected == "a natural number from 0 to 2147483647"
    assert str(e) == "form variable 'n' = '-3': expected a natural number from 0 to 2147483647"
    assert isinstance(e, ValueError)
    m = missing(get_nat)
    assert str(m) == "form variable 'n' is missing: expected a natural number from 0 to 2147483647"


def test_form_error_truncates_long_values():
    e = bad(get_nat, "x" * 10_000)
    text = str(e)
    assert len(text) < 200
    assert "(10000 characters)" in text


def test_form_error_pickles():
    import pickle

    e = pickle.loads(pickle.dumps(FormError("n", "x", "a number")))
    assert (e.name, e.value, e.expected) == ("n", "x", "a number")
    es = pickle.loads(pickle.dumps(FormErrors([FormError("a", None, "b")])))
    assert es.errors[0].name == "a"


def test_form_errors_str_lists_every_error():
    es = FormErrors([FormError("a", "x", "a natural number"), FormError("b", None, "a date")])
    text = str(es)
    assert "2 bad form variables" in text
    assert "form variable 'a' = 'x': expected a natural number" in text
    assert "form variable 'b' is missing: expected a date" in text
    assert str(FormErrors([FormError("a", "x", "y")])) == "form variable 'a' = 'x': expected y"
    with pytest.raises(ValueError):
        FormErrors([])


def test_form_errors_to_html_is_a_complete_escaped_page():
    es = FormErrors(
        [
            FormError("<b>name</b>", "<script>alert(1)</script>", "a number & more"),
            FormError("age", None, "a natural number"),
        ]
    )
    page = es.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>Bad form input</title>" in page
    assert "400" in page
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;name&lt;/b&gt;" in page
    assert "a number &amp; more" in page
    assert "(missing)" in page
    assert page.count("<tr>") == 3  # header + two rows
    assert FormError("n", "<x>", "y").to_html().count("&lt;x&gt;") == 1


@given(name=st.text(max_size=20), value=st.text(max_size=80), expected=st.text(max_size=20))
def test_to_html_never_lets_client_text_make_tags(name, value, expected):
    page = FormErrors([FormError(name, value, expected)]).to_html()
    tags = set(re.findall(r"</?([A-Za-z0-9!]+)", page))
    allowed = {"!DOCTYPE", "html", "head", "meta", "title", "body", "h1", "p", "table"}
    allowed |= {"thead", "tbody", "tr", "th", "td", "code", "em"}
    assert tags <= allowed


# ---------------------------------------------------------------------------------------
# Getters


def test_get_nat():
    assert one(get_nat, "0") == 0
    assert one(get_nat, "42") == 42
    assert one(get_nat, "007") == 7
    assert one(get_nat, str(NAT_MAX)) == NAT_MAX
    for text in ["-3", "+3", " 3", "3 ", "1_000", "3.0", "", "abc", "\u0663", "0x10", "1e3"]:
        bad(get_nat, text)
    bad(get_nat, str(NAT_MAX + 1))
    bad(get_nat, "9" * 5000)  # no int-conversion digit limit error
    assert one(get_nat, "0" * 5000 + "12") == 12
    assert one(get_nat, "100", max=100) == 100
    e = bad(get_nat, "101", max=100)
    assert e.expected == "a natural number from 0 to 100"
    assert missing(get_nat, max=5).expected == "a natural number from 0 to 5"


def test_get_int():
    assert one(get_int, "-5") == -5
    assert one(get_int, "+5") == 5
    assert one(get_int, "0") == 0
    assert one(get_int, str(INT_MIN)) == INT_MIN
    assert one(get_int, str(INT_MAX)) == INT_MAX
    for text in [str(INT_MIN - 1), str(INT_MAX + 1), "--1", "+-1", "1.0", "", "-", " 1", "1 "]:
        bad(get_int, text)
    e = bad(get_int, "11", min=-10, max=10)
    assert e.expected == "an integer from -10 to 10"
    assert one(get_int, "-10", min=-10, max=10) == -10
    bad(get_int, "-11", min=-10, max=10)
    assert one(get_int, str(10**30), min=0, max=10**40) == 10**30
    assert one(get_int, "-" + "0" * 5000 + "12") == -12
    bad(get_int, "-" + "9" * 5000)
    assert missing(get_int).expected == "a whole number, like 42 or -7"  # not the 32-bit bounds


def test_get_real():
    for text, value in [("3", 3.0), ("-0.5", -0.5), (".5", 0.5), ("1.", 1.0), ("1e-3", 0.001)]:
        assert one(get_real, text) == value
    assert one(get_real, "+1E+3") == 1000.0
    for text in ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "0x1p3", "1_0"]:
        bad(get_real, text)
    for text in ["1,5", " 1", "1 ", "", ".", "e3", "1e", "\u0663.5"]:
        bad(get_real, text)
    assert bad(get_real, "x").expected == "a decimal number"
    assert bad(get_real, "11", min=0, max=10).expected == "a decimal number from 0 to 10"
    assert bad(get_real, "-1", min=0).expected == "a decimal number of at least 0"
    assert bad(get_real, "2.5", max=2).expected == "a decimal number of at most 2"
    assert one(get_real, "10", min=0, max=10) == 10.0


def test_get_string():
    assert one(get_string, "  Alice \n") == "Alice"
    assert one(get_string, "  Alice ", strip=False) == "  Alice "
    assert bad(get_string, "").expected == "a non-empty text"
    bad(get_string, "   \t")
    assert one(get_string, "", allow_empty=True) == ""
    assert one(get_string, "   ", allow_empty=True) == ""
    assert one(get_string, "abc", max_length=3) == "abc"
    assert one(get_string, "  abc  ", max_length=3) == "abc"  # length counted after strip
    e = bad(get_string, "abcd", max_length=3)
    assert e.expected == "a non-empty text of at most 3 characters"
    assert missing(get_string).expected == "a non-empty text"


def test_get_bool():
    for text in ["on", "true", "yes", "1", "ON", "True", "YES"]:
        assert one(get_bool, text) is True
    for text in ["off", "false", "no", "0", "OFF", "False", "No"]:
        assert one(get_bool, text) is False
    for text in ["", "maybe", "2", "y", " on"]:
        assert "on, true, yes, 1" in bad(get_bool, text).expected
    missing(get_bool)


GOOD_EMAILS = [
    "alice@example.com",
    "a.b+tag@mail.example.co.uk",
    "o'brien@example.ie",
    "x_y-z@sub-domain.example.org",
    "1234@123.example.com",
    "a@b.cd",
    "a" * 64 + "@example.com",
]

BAD_EMAILS = [
    "",
    "alice",
    "alice@",
    "@example.com",
    "alice@example",
    "alice@@example.com",
    "a@b@example.com",
    "alice @example.com",
    "alice@exa mple.com",
    " alice@example.com",
    "alice@example.com\n",
    ".alice@example.com",
    "alice.@example.com",
    "al..ice@example.com",
    "alice@-example.com",
    "alice@example-.com",
    "alice@example..com",
    "alice@example.com.",
    "alice@1.2.3.4",
    "alice@[127.0.0.1]",
    '"alice"@example.com',
    "alïce@example.com",
    "alice@exämple.com",
    "a" * 65 + "@example.com",
    "a@" + "b" * 64 + ".com",
    "a@" + ".".join(["b" * 60] * 5) + ".com",
]


@pytest.mark.parametrize("text", GOOD_EMAILS)
def test_get_email_accepts(text):
    assert one(get_email, text) == text


@pytest.mark.parametrize("text", BAD_EMAILS)
def test_get_email_rejects(text):
    assert bad(get_email, text).expected == "an e-mail address such as name@example.com"


def test_get_url():
    for text in [
        "http://example.com",
        "https://example.com/path?q=1#frag",
        "HTTPS://Example.COM:8443/",
        "https://user:pw@example.com/",
        "http://[::1]:8000/",
        "http://127.0.0.1/",
        "https://bücher.example/",
        "http://localhost",
    ]:
        assert one(get_url, text) == text
    for text in [
        "",
        "example.com",
        "/relative/path",
        "//example.com/",
        "javascript:alert(1)",
        "http:example.com",
        "http://",
        "https:///path",
        "ftp://example.com/",
        "http://exa mple.com/",
        "http://example.com/a b",
        "http://example.com/\n",
        "\thttp://example.com/",
        "http://example.com:abc/",
        "http://example.com:99999/",
        "http://[zz]/",
        "http://[::1/",
        "http://exa<mple.com/",
    ]:
        e = bad(get_url, text)
        assert e.expected == "an absolute http or https URL such as http://example.com/"
    assert one(get_url, "ftp://example.com/f", schemes=("ftp",)) == "ftp://example.com/f"
    e = bad(get_url, "http://example.com/", schemes=["https"])
    assert e.expected == "an absolute https URL such as https://example.com/"


def test_get_enum_with_strings():
    assert one(get_enum, "b", choices=["a", "b"]) == "b"
    assert get_enum("n", ("a", "b"), form={"n": "a"}) == "a"
    e = bad(get_enum, "c", choices=["a", "b"])
    assert e.expected == "one of 'a', 'b'"
    bad(get_enum, "A", choices=["a", "b"])  # case matters
    assert missing(get_enum, choices=iter(["x", "y"])).expected == "one of 'x', 'y'"
    # an iterator of choices is not used up by the lookup
    assert get_enum("n", iter(["x", "y"]), form={"n": "y"}) == "y"


def test_get_enum_with_an_enum_class():
    assert one(get_enum, "red", choices=Color) is Color.RED
    assert one(get_enum, "GREEN", choices=Color) is Color.GREEN
    assert one(get_enum, "2", choices=Size) is Size.LARGE
    assert one(get_enum, "SMALL", choices=Size) is Size.SMALL
    assert bad(get_enum, "blue", choices=Color).expected == "one of 'red', 'green'"
    bad(get_enum, "Red", choices=Color)


def test_get_date():
    assert one(get_date, "2024-02-29") == datetime.date(2024, 2, 29)
    assert one(get_date, "0001-01-01") == datetime.date(1, 1, 1)
    for text in [
        "2023-02-29",
        "2024-13-01",
        "2024-00-10",
        "0000-01-01",
        "2024-2-3",
        "24-02-03",
        "20240229",
        "2024-02-29T00:00",
        "2024-W09-4",
        " 2024-02-29",
        "\u0662\u0660\u0662\u0664-02-29",
        "",
    ]:
        assert bad(get_date, text).expected.startswith("a date written YYYY-MM-DD")


def test_make_getter():
    def parse_even(text: str) -> int:
        n = parse_nat(text)
        if n % 2:
            raise ValueError("an even natural number")
        return n

    get_even = make_getter(parse_even, "an even number")
    assert get_even.__name__ == "get_even"
    assert one(get_even, "4") == 4
    assert bad(get_even, "3").expected == "an even natural number"
    assert bad(get_even, "x").expected == "a natural number from 0 to 2147483647"
    assert missing(get_even).expected == "an even number"
    assert wrap_opt(get_even)("n", form={"n": "3"}) is None


# ---------------------------------------------------------------------------------------
# Wrappers


def test_wrap_opt_is_the_papers_guess():
    get_guess = wrap_opt(get_nat)
    with use_form({"guess": "42", "bad": "abc", "big": "99999999999"}):
        assert get_guess("guess") == 42
        assert get_guess("bad") is None
        assert get_guess("big") is None
        assert get_guess("absent") is None
        assert get_guess("guess", max=10) is None
    assert wrap_opt(get_enum)("c", ["a"], form={"c": "a"}) == "a"
    assert wrap_opt(get_nat).__name__ == "get_nat"


def test_wrap_opt_lets_other_errors_through():
    with pytest.raises(RuntimeError):
        wrap_opt(get_nat)("n")  # no form at all is a programming error, not bad input


def test_wrap_exn_raises_form_error():
    get = wrap_exn(get_nat)
    assert get("n", form={"n": "5"}) == 5
    with pytest.raises(FormError, match="form variable 'n' = 'x'"):
        get("n", form={"n": "x"})


def test_wrap_fail_collects_every_error():
    with use_form({"age": "x", "mail": "nope", "name": "Ann"}), collect() as found:
        age = wrap_fail(get_nat)("age")
        mail = wrap_fail(get_email)("mail")
        name = wrap_fail(get_string)("name")
        assert (age, mail, name) == (None, None, "Ann")
        assert errors() is found
        assert [e.name for e in found] == ["age", "mail"]
        with pytest.raises(FormErrors) as info:
            check()
    assert [e.name for e in info.value.errors] == ["age", "mail"]
    assert "'age' = 'x'" in str(info.value)


def test_check_passes_when_nothing_failed_and_collectors_are_fresh():
    with collect() as outer:
        wrap_fail(get_nat)("n", form={"n": "x"})
        with collect() as inner:
            assert inner == []
            assert wrap_fail(get_nat)("n", form={"n": "1"}) == 1
            check()
        assert errors() is outer and len(outer) == 1


def test_wrap_fail_outside_a_collector_is_a_clear_error():
    with pytest.raises(RuntimeError, match=re.escape("with forms.collect():")):
        wrap_fail(get_nat)("n", form={"n": "1"})  # even when the value is fine
    with pytest.raises(RuntimeError, match="collect"):
        check()
    with pytest.raises(RuntimeError, match="collect"):
        errors()


# ---------------------------------------------------------------------------------------
# Annotations -> getters


def test_getter_for_plain_types():
    assert getter_for(int) is get_int
    assert getter_for(float) is get_real
    assert getter_for(str) is get_string
    assert getter_for(bool) is get_bool
    assert getter_for(datetime.date) is get_date


def test_getter_for_annotated_aliases():
    assert getter_for(Nat) is get_nat
    assert getter_for(Real) is get_real
    assert getter_for(Email) is get_email
    assert getter_for(Url) is get_url
    assert getter_for(Date) is get_date
    assert getter_for(Annotated[int, "a note"]) is get_int  # no callable: the base type's


def test_getter_for_choices():
    get = getter_for(Literal["a", "b"])
    assert get("x", form={"x": "b"}) == "b"
    with pytest.raises(FormError, match="one of 'a', 'b'"):
        get("x", form={"x": "c"})
    assert getter_for(Literal[1, 2])("x", form={"x": "2"}) == 2
    assert getter_for(Color)("x", form={"x": "red"}) is Color.RED


def test_getter_for_optional_is_wrap_opt():
    for annotation in [int | None, Optional[int], Union[None, int]]:  # noqa: UP007, UP045
        get = getter_for(annotation)
        assert get("n", form={"n": "5"}) == 5
        assert get("n", form={"n": "x"}) is None
        assert get("n", form={}) is None
    assert getter_for(Nat | None)("n", form={"n": "-1"}) is None


@pytest.mark.parametrize(
    "annotation, shown",
    [
        (list[int], "list[int]"),
        (dict, "dict"),
        (bytes, "bytes"),
        (int | str, "int | str"),
        (Literal[1.5], "Literal[1.5]"),
        (Literal[True], "Literal[True]"),
    ],
)
def test_getter_for_unsupported_names_the_annotation(annotation, shown):
    with pytest.raises(TypeError, match=re.escape(shown)):
        getter_for(annotation)


# ---------------------------------------------------------------------------------------
# parse_arguments and check_signature


def register(
    name: str,
    age: Nat,
    email: Email,
    homepage: Url | None = None,
    newsletter: bool = False,
    size: Literal["S", "M", "L"] = "M",
    conn: object = None,
) -> None:
    pass


def test_parse_arguments_reads_typed_parameters():
    form = {
        "name": " Ann ",
        "age": "30",
        "email": "ann@example.com",
        "homepage": "https://ann.example/",
        "newsletter": "on",
        "size": "L",
    }
    assert parse_arguments(register, form) == {
        "name": "Ann",
        "age": 30,
        "email": "ann@example.com",
        "homepage": "https://ann.example/",
        "newsletter": True,
        "size": "L",
    }


def test_parse_arguments_defaults_and_optionals():
    form = {"name": "Ann", "age": "30", "email": "ann@example.com", "homepage": "not a url"}
    args = parse_arguments(register, form)
    assert args["homepage"] is None  # optional + invalid -> None
    assert args["newsletter"] is False  # unchecked checkbox: missing -> default
    assert args["size"] == "M"
    assert "conn" not in args


def test_parse_arguments_reports_every_bad_field_at_once():
    form = {"name": "  ", "age": "-1", "homepage": "javascript:x", "size": "XL"}
    with pytest.raises(FormErrors) as info:
        parse_arguments(register, form)
    es = info.value.errors
    assert [(e.name, e.value) for e in es] == [
        ("name", "  "),
        ("age", "-1"),
        ("email", None),
        ("size", "XL"),
    ]
    page = info.value.to_html()
    for name in ["name", "age", "email", "size"]:
        assert f"<code>{name}</code>" in page


def test_parse_arguments_three_bad_fields_one_error():
    def f(a: int, b: float, c: datetime.date) -> None:
        pass

    with pytest.raises(FormErrors) as info:
        parse_arguments(f, {"a": "x", "b": "y", "c": "z"})
    assert [e.name for e in info.value.errors] == ["a", "b", "c"]
    text = str(info.value)
    assert "3 bad form variables" in text
    assert "'a' = 'x'" in text and "'b' = 'y'" in text and "'c' = 'z'" in text


def test_optional_semantics_table():
    def f(
        a: int | None,
        b: int | None = None,
        c: int | None = 7,
        d: int = 7,
        e: int = 7,
    ) -> None:
        pass

    assert parse_arguments(f, {}) == {"a": None, "b": None, "c": 7, "d": 7, "e": 7}
    assert parse_arguments(f, {"a": "x", "b": "x", "c": "x", "d": "1"}) == {
        "a": None,
        "b": None,
        "c": None,  # invalid -> None even with a default: the paper's wrapOpt
        "d": 1,
        "e": 7,
    }
    with pytest.raises(FormErrors) as info:
        parse_arguments(f, {"d": "x", "e": ""})  # present but invalid: errors
    assert [(x.name, x.value) for x in info.value.errors] == [("d", "x"), ("e", "")]


def test_unannotated_parameters_are_strings_and_skip_is_honoured():
    def f(conn, a, b="z", *args, request=None, **kwargs):
        pass

    assert parse_arguments(f, {"a": " x ", "request": "r"}, skip=("conn",)) == {
        "a": "x",
        "b": "z",
        "request": "r",
    }
    assert parse_arguments(f, {"a": "x", "conn": "1"}, skip=("conn", "request")) == {
        "a": "x",
        "b": "z",
    }


def test_parse_arguments_uses_the_current_form():
    def f(n: Nat) -> None:
        pass

    with use_form(MultiDict([("n", "1"), ("n", "2")])):
        assert parse_arguments(f) == {"n": 2}
    with pytest.raises(RuntimeError, match="use_form"):
        parse_arguments(f)


def test_parse_arguments_with_string_annotations():
    def f(n: "Nat | None" = None, when: "Date" = datetime.date(2000, 1, 1)) -> None:  # noqa: UP037
        pass

    assert parse_arguments(f, {"n": "3"}) == {"n": 3, "when": datetime.date(2000, 1, 1)}
    assert parse_arguments(f, {"n": "x", "when": "2024-05-06"}) == {
        "n": None,
        "when": datetime.date(2024, 5, 6),
    }


SERVICE_MODULE = """
from __future__ import annotations

import datetime
import enum

from pyweb.forms import Email, Nat

class Flavour(enum.Enum):
    VANILLA = "vanilla"
    LEMON = "lemon"

async def order(conn, qty: Nat, flavour: Flavour, who: Email | None = None,
                when: datetime.date | None = None, note: str = "") -> str:
    return "ok"
"""


def test_parse_arguments_in_a_future_annotations_module():
    namespace: dict = {"__name__": "svc_module"}
    exec(compile(SERVICE_MODULE, "svc_module.py", "exec"), namespace)
    order = namespace["order"]
    flavour = namespace["Flavour"]
    assert isinstance(order.__annotations__["qty"], str)  # the future import is in force
    check_signature(order)
    args = parse_arguments(order, {"qty": "2", "flavour": "LEMON", "when": "2024-01-02"})
    assert args == {
        "qty": 2,
        "flavour": flavour.LEMON,
        "who": None,
        "when": datetime.date(2024, 1, 2),
        "note": "",
    }
    with pytest.raises(FormErrors) as info:
        parse_arguments(order, {"qty": "two", "flavour": "mint", "note": " "})
    assert [e.name for e in info.value.errors] == ["qty", "flavour", "note"]


def test_check_signature_names_the_bad_parameter():
    def good(a: int, b: Nat | None = None, conn=None) -> None:
        pass

    def bad_type(a: int, items: list[int]) -> None:
        pass

    def bad_union(a: int | str) -> None:
        pass

    def unknown_name(a: NoSuchType) -> None:  # noqa: F821
        pass

    def positional(a: int, /) -> None:
        pass

    check_signature(good)
    with pytest.raises(TypeError, match=r"parameter 'items'.*list\[int\]"):
        check_signature(bad_type)
    with pytest.raises(TypeError, match=r"parameter 'a'.*int \| str"):
        check_signature(bad_union)
    with pytest.raises(TypeError, match="NoSuchType"):
        check_signature(unknown_name)
    with pytest.raises(TypeError, match="positional-only"):
        check_signature(positional)
    # parse_arguments reports the same problem (every time, not only the first)
    for _ in range(2):
        with pytest.raises(TypeError, match="parameter 'items'"):
            parse_arguments(bad_type, {"a": "1", "items": "x"})


def test_parse_arguments_on_methods_and_partials():
    import functools

    class Shop:
        def buy(self, qty: Nat, conn=None) -> None:
            pass

    assert parse_arguments(Shop().buy, {"qty": "3"}) == {"qty": 3}

    def f(a: int, b: int) -> None:
        pass

    assert parse_arguments(functools.partial(f, b=1), {"a": "2", "b": "5"}) == {"a": 2, "b": 5}

    class Handler:
        def __call__(self, when: Date, conn=None) -> None:
            pass

    assert parse_arguments(Handler(), {"when": "2024-01-31"}) == {
        "when": datetime.date(2024, 1, 31)
    }


# ---------------------------------------------------------------------------------------
# Properties


@given(st.data())
def test_parse_nat_accepts_every_natural_up_to_max(data):
    maximum = data.draw(st.integers(0, 2**70))
    n = data.draw(st.integers(0, maximum))
    assert parse_nat(str(n), max=maximum) == n
    with pytest.raises(ValueError):
        parse_nat(str(maximum + 1), max=maximum)


@given(st.integers(0, NAT_MAX))
def test_get_nat_round_trip(n):
    assert get_nat("n", form={"n": str(n)}) == n


@given(st.text())
def test_parse_nat_accepts_only_ascii_digits(text):
    try:
        n = parse_nat(text)
    except ValueError as exc:  # anything else fails the test
        assert str(exc) == "a natural number from 0 to 2147483647"
        if text and all(c in string.digits for c in text):
            assert int(text) > NAT_MAX
        return
    assert text and all(c in string.digits for c in text)
    assert n == int(text) <= NAT_MAX


@given(st.integers(INT_MIN, INT_MAX))
def test_get_int_round_trip(n):
    assert get_int("n", form={"n": str(n)}) == n
    if n >= 0:
        assert get_int("n", form={"n": f"+{n}"}) == n


@given(st.integers().filter(lambda n: not INT_MIN <= n <= INT_MAX))
def test_get_int_rejects_out_of_range(n):
    with pytest.raises(FormError):
        get_int("n", form={"n": str(n)})


@given(st.text())
def test_parse_int_only_raises_value_error(text):
    try:
        n = parse_int(text)
    except ValueError:
        return
    assert INT_MIN <= n <= INT_MAX and n == int(text)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_get_real_round_trip(x):
    got = get_real("x", form={"x": repr(x)})
    assert repr(got) == repr(x)


@given(st.text())
def test_parse_real_only_raises_value_error_and_gives_finite_numbers(text):
    try:
        x = parse_real(text)
    except ValueError:
        return
    assert x == float(text) and abs(x) != float("inf")


@given(st.dates())
def test_get_date_round_trip(d):
    assert get_date("d", form={"d": d.isoformat()}) == d
    assert parse_date(d.isoformat()) == d


ATEXT = string.ascii_letters + string.digits + "!#$%&'*+/=?^_`{|}~-"
LDH = string.ascii_letters + string.digits

local_parts = st.lists(st.text(ATEXT, min_size=1, max_size=10), min_size=1, max_size=3).map(
    ".".join
)
labels = st.builds(
    lambda first, middle, last: first + middle + last if middle or last else first,
    st.sampled_from(LDH),
    st.text(LDH + "-", max_size=10),
    st.text(LDH, min_size=1, max_size=1),
)
top_labels = st.text(string.ascii_letters, min_size=2, max_size=6)
domains = st.builds(
    lambda ls, top: ".".join([*ls, top]), st.lists(labels, min_size=1, max_size=3), top_labels
)
emails = st.builds(lambda local, domain: f"{local}@{domain}", local_parts, domains)


@given(emails)
def test_get_email_accepts_generated_addresses(address):
    assert get_email("e", form={"e": address}) == address


@given(emails, st.data())
def test_get_email_rejects_a_space_anywhere(address, data):
    where = data.draw(st.integers(0, len(address)))
    space = data.draw(st.sampled_from([" ", "\t", "\n", "\u00a0"]))
    with pytest.raises(ValueError):
        parse_email(address[:where] + space + address[where:])


@given(st.text().filter(lambda t: "@" not in t))
def test_parse_email_rejects_text_without_at(text):
    with pytest.raises(ValueError):
        parse_email(text)


def test_the_docstring_examples_run():
    import doctest

    result = doctest.testmod(forms)
    assert result.attempted >= 5 and result.failed == 0


def test_get_nat_takes_the_same_bounds_as_get_int():
    assert get_nat("priority", form={"priority": "3"}, min=1, max=5) == 3
    for bad in ("0", "6", "-1"):
        with pytest.raises(FormError) as info:
            get_nat("priority", form={"priority": bad}, min=1, max=5)
        assert "a natural number from 1 to 5" in str(info.value)
    assert parse_nat("7", min=7, max=7) == 7
    with pytest.raises(ValueError, match="never below 0"):
        get_nat("n", form={"n": "1"}, min=-1)
