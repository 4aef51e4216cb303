"""The example site (pages/): every page answers, the guessing game can be played to the end."""

from __future__ import annotations

import datetime
import html
import os
import re
from pathlib import Path

import pytest

from pyweb import signing
from pyweb.app.site import Site
from pyweb.app.static import is_content_name
from pyweb.testing import serve

from ..csrf_helpers import csrf_token, token_from

pytestmark = pytest.mark.loops("trio", "asyncio")

PAGES = Path(__file__).resolve().parents[2] / "pages"


@pytest.fixture(scope="module")
def client(loop):
    with serve(PAGES, loop=loop) as client:
        yield client


def every_url() -> list[str]:
    site = Site(PAGES)
    # guest_add is the target of the guest book's form: POST only (tests/db covers it).
    # source needs ?file=: tested on its own below
    urls = ["/" + name for name in site.scripts if name not in ("guest_add", "source")]
    urls += [path for path in site.services if path != "/svc/mul"] + ["/svc/mul?n=4"]
    urls += [
        "/" + name.removesuffix(".html")
        for name in site.templates.env.list_templates()
        if not name.startswith("_")  # private: a layout, the error page
    ]
    for directory, dirs, files in os.walk(PAGES):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # tool caches (.ruff_cache)
        for f in files:
            rel = os.path.relpath(os.path.join(directory, f), PAGES)
            if (
                is_content_name(f)  # not settings (ruff.toml), sources, the schema (.sql)
                and not rel.startswith(("templates", "_", "data"))  # data/: the SQLite file
                and "__pycache__" not in rel
            ):
                urls.append("/" + rel)
    return sorted(urls)


def test_every_page_answers_200(client):
    urls = every_url()
    assert "/ruff.toml" not in urls and client.get("/ruff.toml").status == 404
    assert {"/hello", "/date", "/calendar", "/mul", "/table", "/guess", "/time_of_day"} <= set(urls)
    for url in urls:
        r = client.get(url)
        assert r.status == 200, (url, r.text[:300])
        assert r.body, url


def test_table_1_scripts(client):
    assert "Hello, world!" in client.get("/hello").text
    assert re.search(r"The time of day is \d\d\.\d\d\.\d\d\.", client.get("/time_of_day").text)
    assert client.get("/calendar").text.count('<div class="month">') == 13
    assert client.get("/table").text.count("<tr>") == 501  # a header row and 500 lines
    assert "&lt;of 500&gt;" in client.get("/table").text
    mul = client.get("/mul?n=12").text
    assert "<td>144</td>" in mul and "<td>169</td>" not in mul
    assert client.get("/mul?n=99").text.count("<tr>") == 11  # out of range: the default 10


def play(client, url: str) -> list[str]:
    """Play the guessing game by bisection; return the titles seen."""
    page = client.get(url).text
    titles = [re.search(r"<h1>(.*?)</h1>", page).group(1)]
    n = re.search(r'name="n" value="([^"]+)"', page).group(1)
    token = token_from(page)  # every POST form of the site carries the CSRF token
    bad = client.post(url, {"n": n, "guess": "forty-two", "csrf_token": token}).text
    titles.append(re.search(r"<h1>(.*?)</h1>", bad).group(1))
    low, high = 0, 100
    while True:
        guess = (low + high) // 2
        page = client.post(url, {"n": n, "guess": str(guess), "csrf_token": token}).text
        title = re.search(r"<h1>(.*?)</h1>", page).group(1)
        titles.append(title)
        if "too big" in title:
            high = guess - 1
        elif "too small" in title:
            low = guess + 1
        else:
            assert title == "Congratulations!"
            assert f"You guessed the number {guess}." in page and "Play again?" in page
            return titles
        assert len(titles) < 12


@pytest.mark.parametrize("url", ["/guess", "/svc/guess", "/guess_signed"])
def test_the_guessing_game_to_the_end(client, url):
    titles = play(client, url)
    assert titles[0] == "Guess a number between 0 and 100"
    assert titles[1] == "You must type a number - try again"
    assert titles[-1] == "Congratulations!"


def test_guess_pictures_and_hidden_field(client):
    token = csrf_token(client, "/guess")
    page = client.post("/guess", {"n": "50", "guess": "70", "csrf_token": token}).text
    assert 'src="/img/large.svg"' in page and '<input type="hidden" name="n" value="50">' in page
    page = client.post("/guess", {"n": "50", "guess": "20", "csrf_token": token}).text
    assert 'src="/img/small.svg"' in page
    won = client.post("/guess", {"n": "50", "guess": "50", "csrf_token": token}).text
    assert 'src="/img/yes.svg"' in won
    for picture in ("guess", "large", "small", "yes"):
        r = client.get(f"/img/{picture}.svg")
        assert r.headers["content-type"].startswith("image/svg+xml") and b"<svg" in r.body


def _changed_signature(token: str) -> str:
    """The token with the first character of its signature changed. (Not the last one: the
    last base64 character of a signature carries padding bits, and some changes of it decode
    to the same bytes, so the token would still verify.)"""
    value, _, signature = token.rpartition(".")
    first = "A" if signature[0] != "A" else "B"
    return f"{value}.{first}{signature[1:]}"


def test_the_hidden_number_can_be_forged_in_guess_but_not_in_guess_signed(client):
    token = csrf_token(client, "/guess")
    # guess.py trusts its hidden field: the player chooses the number, and wins at once.
    cheat = client.post("/guess", {"n": "7", "guess": "7", "csrf_token": token}).text
    assert "Congratulations!" in cheat
    # guess_signed.py's field is signed: a changed one is refused and a new game starts.
    page = client.get("/guess_signed").text
    signed = re.search(r'name="n" value="([^"]+)"', page).group(1)
    assert signing.unsign(signed, salt="guess") in range(101)
    for forged in (
        "7",
        _changed_signature(signed),
        signing.sign(7, salt="other"),
    ):
        page = client.post("/guess_signed", {"n": forged, "guess": "7", "csrf_token": token}).text
        assert "That game was changed on the way" in page, forged
        assert "Congratulations!" not in page


def test_a_form_with_three_bad_fields_shows_one_page_naming_all_three(client):
    token = csrf_token(client, "/booking")
    r = client.post(
        "/booking",
        {
            "name": "Ada",
            "email": "ada-at-example",
            "arrival": "31/12/2026",
            "nights": "0",
            "csrf_token": token,
        },
    )
    assert r.status == 400
    text = html.unescape(r.text)
    for name, value in (("email", "ada-at-example"), ("arrival", "31/12/2026"), ("nights", "0")):
        assert name in text and value in text
    assert "'Ada'" not in text  # the good field is not listed
    # the form's label and the error agree on the range
    assert "Nights (1 to 30)" in client.get("/booking").text
    assert "a natural number from 1 to 30" in text
    later = (datetime.date.today() + datetime.timedelta(days=30)).isoformat()
    ok = client.post(
        "/booking",
        {
            "name": "Ada",
            "email": "ada@example.org",
            "arrival": later,
            "nights": "2",
            "csrf_token": token,
        },
    )
    assert ok.status == 200 and f"we expect you on {later} for 2 night(s)" in ok.text
    past = client.post(
        "/booking",
        {
            "name": "Ada",
            "email": "ada@example.org",
            "arrival": "2001-01-01",
            "nights": "2",
            "csrf_token": token,
        },
    )
    assert past.status == 422
    assert "2001-01-01 is in the past" in past.text
    assert '<link rel="stylesheet" href="/style.css">' in past.text  # the site's layout


def test_services_and_templates(client):
    assert client.get("/svc/hello").text == client.get("/svc/hello").text
    r = client.get("/svc/mul?n=abc")
    assert r.status == 400 and "n" in r.text
    assert client.get("/svc/mul?n=31").status == 400
    assert "Hello, &lt;b&gt;Ada&lt;/b&gt;!" in client.get("/greet?name=<b>Ada</b>").text


def test_source_is_not_served(client):
    for url in (
        "/_layout.py",
        "/_layout",
        "/hop_services",
        "/hop_services.py",
        "/templates/greet.html",
    ):
        assert client.get(url).status == 404, url


HTML_PAGES = [
    "/hello", "/date", "/calendar", "/mul", "/table", "/db", "/guest", "/log", "/guess",
    "/time_of_day", "/booking", "/exchange", "/counter", "/counter_fixed", "/greet",
    "/svc/hello", "/svc/mul?n=3", "/svc/guess", "/guess_signed", "/chat",
]  # fmt: skip


def test_every_page_shares_the_layout_and_links_its_source(client):
    for url in HTML_PAGES:
        text = client.get(url).text
        assert '<link rel="stylesheet" href="/style.css">' in text, url
        assert '<link rel="icon" href="/favicon.ico">' in text, url
        assert '<header><a href="/">pyweb examples</a></header>' in text, url
        link = re.search(r'<a href="(/source\?file=[^"]+)" class="source">', text)
        assert link, url
        source = client.get(html.unescape(link.group(1)))
        assert source.status == 200, (url, link.group(1))
        assert '<pre class="source">' in source.text
    assert "/source?file=hop_services.py" in client.get("/svc/hello").text
    assert "/source?file=templates/greet.html" in client.get("/greet").text
    assert "<center>" not in client.get("/guess").text


def test_view_source_highlights_and_shows_nothing_hidden(client, tmp_path):
    r = client.get("/source?file=guess.py")
    assert r.status == 200
    assert '<span class="k">import</span> random' in r.text
    assert '<span class="c"># SMLserver §2.3: &quot;Guess a number&quot;.' in r.text
    for bad in ("_layout.py", "../pyproject.toml", "data/pyweb.sqlite3", "schema.sql",
                ".hidden.py", "templates/_error.html", "/etc/passwd", "guess.py/..",
                "nothing.py", "style.css", "templates/../guess.py", "index.html"):  # fmt: skip
        r = client.get("/source", query={"file": bad}) if False else client.get(
            "/source?file=" + bad.replace("/", "%2F")
        )
        assert r.status == 400, (bad, r.status)


def test_the_game_echoes_the_guess(client):
    token = csrf_token(client, "/guess")

    def title(guess: str) -> str:
        page = client.post("/guess", {"n": "70", "guess": guess, "csrf_token": token}).text
        return re.search(r"<h1>(.*?)</h1>", page).group(1)  # type: ignore[union-attr]

    assert title("50") == "50 is too small - try again"
    assert title("80") == "80 is too big - try again"
    assert title("-5") == "-5 is not a number from 0 to 100 - try again"
    assert title("") == "You must type a number - try again"
    assert title("forty") == "You must type a number - try again"


@pytest.mark.parametrize(
    "amount, says",
    [
        ("lots", "lots is not a number"),
        ("-5", "-5 is negative"),
        ("1e12", "1e12 is too large"),
        ("nan", "nan is not a number"),
    ],
)
def test_the_exchange_says_why_an_amount_is_refused(client, amount, says):
    r = client.post("/exchange", {"a": amount, "csrf_token": csrf_token(client, "/exchange")})
    assert r.status == 200
    assert f'<p class="message">{says}' in html.unescape(r.text).replace("'", '"')
    assert 'name="a"' in r.text  # the form again, to correct it


def test_a_favicon_and_table_styles(client):
    r = client.get("/favicon.ico")
    assert r.status == 200 and r.body[:4] == b"\x00\x00\x01\x00"  # an ICO file
    css = client.get("/style.css").text
    assert "border-collapse" in css and ".calendar" in css
    assert '<table class="mul">' in client.get("/mul").text


def test_error_pages_of_the_example_site_use_its_layout(client):
    r = client.get("/no-such-page")
    assert r.status == 404
    assert '<header><a href="/">pyweb examples</a></header>' in r.text
    assert "<h1>404 Not Found</h1>" in r.text
    r = client.get("/svc/mul?n=abc")
    assert r.status == 400
    assert "<h1>400 Bad form input</h1>" in r.text and "<td><code>n</code></td>" in r.text
