"""``pyweb.forms.Form``: a form declared once renders itself, parses a request with every
error collected, and re-renders with the values typed and each message beside its field.
Property: rendering a form's values and parsing the HTML back gives the same values."""

from __future__ import annotations

import datetime
import enum
import html
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Annotated, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyweb import db
from pyweb.forms import Date, Email, Form, FormErrors, Nat, Real, Url, field, get_nat
from pyweb.testing import serve

from ..csrf_helpers import token_from

pytestmark = pytest.mark.loops("trio", "asyncio")

PAGES = Path(__file__).resolve().parents[2] / "pages"


class Colour(enum.Enum):
    RED = "red"
    DARK_BLUE = "blue"


class Everything(Form):
    name: str = field("Name", max_length=50)
    age: Nat = field("Age", min=0, max=150)
    temp: int = field("Temperature")
    ratio: Real = field("Ratio")
    email: Email = field("E-mail")
    site: Url = field("Web site")
    when: Date = field("When")
    size: Literal["s", "m", "l"] = field("Size")
    colour: Colour = field("Colour")
    news: bool = field("Send news")
    note: str | None = field("Note", widget="textarea", max_length=500)


class Inputs(HTMLParser):
    """What a browser would send for a rendered form: each named input, textarea and
    selected option (unchecked boxes send nothing)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sent: dict[str, str] = {}
        self.hidden: dict[str, str] = {}
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "input" and a.get("name"):
            if a.get("type") == "checkbox":
                if "checked" in a:
                    self.sent[a["name"]] = a.get("value") or "on"
            elif a.get("type") == "hidden":
                self.hidden[a["name"]] = a.get("value") or ""
            else:
                self.sent[a["name"]] = a.get("value") or ""
        elif tag == "textarea":
            self._textarea = a["name"]
            self.sent[a["name"]] = ""
        elif tag == "select":
            self._select = a["name"]
        elif tag == "option" and "selected" in a and self._select:
            self.sent[self._select] = a["value"] or ""

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.sent[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":  # HTML drops one newline right after <textarea>
            self.sent[self._textarea] = self.sent[self._textarea].removeprefix("\n")  # type: ignore[index]
            self._textarea = None
        elif tag == "select":
            self._select = None


def newlines(text: str) -> str:
    """Line ends as a browser reads them from a page (HTML's input stream: CR LF and CR
    become LF)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def sent_by(markup: str) -> dict[str, str]:
    parser = Inputs()
    parser.feed(newlines(markup))
    return parser.sent


# -- unit: parse, messages, render ---------------------------------------------------------


@pytest.mark.loop_free
def test_parse_collects_every_error_and_keeps_every_good_value():
    form = Everything.parse({"name": " Ann ", "age": "200", "temp": "x", "email": "a@b.co"})
    assert not form.ok
    assert set(form.errors) == {"age", "temp", "ratio", "site", "when", "size", "colour"}
    assert form.name == "Ann" and form.email == "a@b.co"
    assert form.news is False and form.note is None  # unchecked box, empty optional field
    assert form.message("age") == "Expected a natural number from 0 to 150."
    assert form.message("ratio") == "Required: a decimal number."
    assert form.message("name") is None
    with pytest.raises(FormErrors) as caught:
        form.check()
    assert [e.name for e in caught.value.errors] == list(form.errors)


@pytest.mark.loop_free
def test_render_shows_values_as_typed_escaped_with_messages_beside_their_fields():
    form = Everything.parse({"name": '<script>"x"</script>', "age": "a&b", "note": "</textarea>"})
    markup = form.render(action="/go").__html__()
    assert "<script>" not in markup and "</textarea></textarea>" not in markup
    assert 'value="&lt;script&gt;&#34;x&#34;&lt;/script&gt;"' in markup or (
        'value="&lt;script&gt;&quot;x&quot;&lt;/script&gt;"' in markup
    )
    age = re.search(r'<p class="field has-error">.*?</p>', markup[markup.index('name="age"') - 200 :])
    assert age is not None
    assert 'value="a&amp;b"' in age.group(0)
    assert "Expected a natural number from 0 to 150." in age.group(0)
    assert 'aria-describedby="age-error"' in age.group(0) and 'id="age-error"' in age.group(0)
    assert sent_by(markup)["note"] == "</textarea>"
    assert sent_by(markup)["age"] == "a&b"


@pytest.mark.loop_free
def test_a_password_is_never_shown_again():
    class Login(Form):
        user: str
        password: str = field("Password", widget="password")

    parsed = Login.parse({"user": "", "password": "hunter2"})
    assert parsed.password == "hunter2" and "user" in parsed.errors
    markup = parsed.render().__html__()
    assert "hunter2" not in markup and sent_by(markup)["password"] == ""


def test_a_form_outside_a_request_has_no_csrf_field_and_inserts_in_a_quotation():
    from pyweb import qq

    markup = qq("<div>{form}</div>", form=Everything()).__html__()
    assert markup.startswith('<div><form method="post">')
    assert "csrf_token" not in markup


@pytest.mark.loop_free
def test_declaration_mistakes_are_caught_when_the_class_is_made():
    with pytest.raises(TypeError, match=r"Bad\.n: .*mx"):

        class Bad(Form):
            n: Nat = field(mx=3)

    with pytest.raises(TypeError, match=r"Odd\.when: no form getter for annotation list"):

        class Odd(Form):
            when: list = field()

    with pytest.raises(ValueError, match="widget 'slider'"):
        field(widget="slider")
    with pytest.raises(TypeError, match="has no field 'nope'"):
        Everything({"nope": 1})


def test_fields_without_field_and_subclasses_and_custom_getters():
    def get_even(name, *, form=None):
        n = get_nat(name, form=form)
        if n % 2:
            from pyweb.forms import FormError

            raise FormError(name, str(n), "an even number")
        return n

    class Base(Form):
        first_name: str

    class More(Base):
        even: Annotated[int, get_even] = field("An even number")

    assert list(More.fields) == ["first_name", "even"]
    assert More.fields["first_name"].label == "First name"
    parsed = More.parse({"first_name": "Bo", "even": "3"})
    assert parsed.errors["even"].expected == "an even number"
    assert More.parse({"first_name": "Bo", "even": "4"}).even == 4


# -- property: render, then parse, gives the values back -------------------------------------

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=50
).map(str.strip).filter(bool)
_note = st.one_of(
    st.none(),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00"),
        min_size=1,
        max_size=80,
    ).map(str.strip).filter(bool),
)
_values = st.fixed_dictionaries(
    {
        "name": _text,
        "age": st.integers(0, 150),
        "temp": st.integers(-(2**31), 2**31 - 1),
        "ratio": st.floats(allow_nan=False, allow_infinity=False),
        "email": st.from_regex(r"[a-z0-9]{1,10}(\.[a-z0-9_+-]{1,5})?@[a-z]{1,10}\.(com|org)", fullmatch=True),
        "site": st.from_regex(r"https?://[a-z]{1,10}\.example(:[0-9]{2,4})?/[a-z0-9/]{0,8}", fullmatch=True),
        "when": st.dates(datetime.date(1000, 1, 1), datetime.date(9999, 12, 31)),
        "size": st.sampled_from(["s", "m", "l"]),
        "colour": st.sampled_from(list(Colour)),
        "news": st.booleans(),
        "note": _note,
    }
)


@pytest.mark.loop_free
@given(_values)
def test_render_then_parse_round_trips_the_values(values):
    markup = Everything(values).render().__html__()
    parsed = Everything.parse(sent_by(markup))
    assert parsed.ok, parsed.errors
    assert parsed.values == values


@pytest.mark.loop_free
@given(st.dictionaries(st.sampled_from(list(Everything.fields)), st.text(max_size=30)))
def test_whatever_is_sent_shows_again_as_sent(sent):
    parsed = Everything.parse(sent)
    shown = sent_by(parsed.render().__html__())
    for name, text in sent.items():
        f = Everything.fields[name]
        if f.widget == "checkbox":
            assert (name in shown) == (text.lower() in ("on", "true", "yes", "1"))
        elif f.widget == "select":
            assert shown.get(name) == (text if any(v == text for v, _ in f.choices) else None)
        else:  # text boxes and the text area: the text itself, escaped and unescaped
            assert shown[name] == newlines(text)


# -- over real sockets: the example site's booking and guest book ------------------------------


@pytest.fixture(scope="module")
def client(loop):
    with serve(PAGES, loop=loop) as client:
        yield client


def test_the_booking_form_re_renders_with_values_and_messages(client):
    blank = client.get("/booking")
    token = token_from(blank.text)  # the form renders its CSRF field
    assert '<form action="/booking" method="post"><input type="hidden" name="csrf_token"' in blank.text
    bad = client.post(
        "/booking",
        {"name": "<Ann>", "email": "ann-at-home", "arrival": "", "nights": "31", "csrf_token": token},
    )
    assert bad.status == 400
    text = bad.text
    assert 'value="&lt;Ann&gt;"' in text and "<Ann>" not in text
    assert 'value="ann-at-home"' in text and 'value="31"' in text
    for name, message in (
        ("email", "Expected an e-mail address"),
        ("arrival", "Expected a date"),
        ("nights", "Expected a natural number from 1 to 30."),
    ):
        paragraph = re.search(rf'<p class="field has-error"><label>[^<]*<input[^>]*name="{name}".*?</p>', text)
        assert paragraph is not None, name
        assert html.unescape(paragraph.group(0)).count(message[:20]) == 1, (name, paragraph.group(0))
    assert token_from(text)  # the form shown again still carries the token
    later = (datetime.date.today() + datetime.timedelta(days=3)).isoformat()
    good = client.post(
        "/booking",
        {"name": "Ann", "email": "ann@example.org", "arrival": later, "nights": "2", "csrf_token": token},
    )
    assert good.status == 200 and f"we expect you on {later} for 2 night(s)" in good.text


@pytest.fixture
def guest_book(tmp_path):
    root = tmp_path / "pages"
    shutil.copytree(PAGES, root, ignore=shutil.ignore_patterns("data", "__pycache__"))
    db.configure(f"sqlite:///{tmp_path / 'guest.sqlite3'}", site=root)
    try:
        with serve(root) as client:
            yield client
    finally:
        db.configure(None)


def test_the_guest_book_form_parses_shows_errors_and_flashes_thanks(guest_book):
    client = guest_book
    token = token_from(client.get("/guest").text)
    bad = client.post("/guest_add", {"name": "", "email": "x" * 95 + "@b.org", "comment": "hi <3", "csrf_token": token})
    assert bad.status == 400
    assert "Required" not in bad.text  # the fields were sent, only empty or too long
    assert bad.text.count('class="field-error"') == 2  # name and email; the comment is fine
    assert "hi &lt;3</textarea>" in bad.text
    assert "guest" not in client.get("/guest").text.split("<ul>")[1].split("</ul>")[0]  # nothing stored
    done = client.post("/guest_add", {"name": "Ann", "email": "ann@example.org", "comment": "hi <3", "csrf_token": token})
    assert done.status == 303 and done.headers["location"] == "/guest"
    page = client.get("/guest").text
    assert "Thank you: your comment is in the guest book." in page and "hi &lt;3" in page
    assert "Thank you" not in client.get("/guest").text  # shown once
    refused = client.get("/guest_add?name=Mallory&email=m@evil.example&comment=x")
    assert refused.status == 405 and refused.headers["allow"] == "POST"
    assert "Mallory" not in client.get("/guest").text
