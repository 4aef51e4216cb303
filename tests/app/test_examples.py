"""The example site (pages/): every page answers, the guessing game can be played to the end."""

from __future__ import annotations

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

PAGES = Path(__file__).resolve().parents[2] / "pages"


@pytest.fixture(scope="module")
def client():
    with serve(PAGES) as client:
        yield client


def every_url() -> list[str]:
    site = Site(PAGES)
    # guest_add is the target of the guest book's form: POST only (tests/db covers it).
    urls = ["/" + name for name in site.scripts if name != "guest_add"]
    urls += [path for path in site.services if path != "/svc/mul"] + ["/svc/mul?n=4"]
    urls += ["/" + name.removesuffix(".html") for name in site.templates.env.list_templates()]
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
    titles = [re.search(r"<h2>(.*?)</h2>", page).group(1)]
    n = re.search(r'name="n" value="([^"]+)"', page).group(1)
    token = token_from(page)  # every POST form of the site carries the CSRF token
    bad = client.post(url, {"n": n, "guess": "forty-two", "csrf_token": token}).text
    titles.append(re.search(r"<h2>(.*?)</h2>", bad).group(1))
    low, high = 0, 100
    while True:
        guess = (low + high) // 2
        page = client.post(url, {"n": n, "guess": str(guess), "csrf_token": token}).text
        title = re.search(r"<h2>(.*?)</h2>", page).group(1)
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
        signed[:-1] + ("A" if signed[-1] != "A" else "B"),
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
            "nights": "-2",
            "csrf_token": token,
        },
    )
    assert r.status == 400
    text = html.unescape(r.text)
    for name, value in (("email", "ada-at-example"), ("arrival", "31/12/2026"), ("nights", "-2")):
        assert name in text and value in text
    assert "'Ada'" not in text  # the good field is not listed
    ok = client.post(
        "/booking",
        {
            "name": "Ada",
            "email": "ada@example.org",
            "arrival": "2026-12-31",
            "nights": "2",
            "csrf_token": token,
        },
    )
    assert ok.status == 200 and "we expect you on 2026-12-31 for 2 night(s)" in ok.text


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
