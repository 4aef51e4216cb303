"""SMLserver's eight Table 1 scripts written for the peers: Flask (WSGI) and Starlette (ASGI).

These play the role of the paper's PHP and TCL columns: the same pages, written the way a
Flask or Starlette user would write them (Jinja2 templates, a database connection per
request as Flask's tutorial does, sync endpoints for blocking database calls so Starlette
runs them in its thread pool). The pages and the database content match pyweb's
``pages/`` scripts, so the byte counts are close; the benchmark checks the status only.

``TABLE1_DB`` is the SQLite file the benchmark prepared (``benchmarks/table1.py``).
Run: ``gunicorn table1_peers:flask_app`` or ``uvicorn table1_peers:starlette_app``.
"""

from __future__ import annotations

import calendar
import datetime
import os
import sqlite3

from jinja2 import Environment

DB = os.environ.get("TABLE1_DB", "")
env = Environment(autoescape=True)

LAYOUT = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{ title }}</title>
<link rel="stylesheet" href="/style.css"><link rel="icon" href="/favicon.ico"></head>
<body><header><a href="/">peer examples</a></header><main><h1>{{ title }}</h1>
{% block body %}{% endblock %}</main>
<footer><p>Served by <a href="/">a peer</a>, after SMLserver and Hop.
<a href="/source?file=page.py" class="source">View the source of this page</a></p></footer>
</body></html>"""


def _page(body: str):
    return env.from_string(LAYOUT.replace("{% block body %}{% endblock %}", body))


HELLO = (  # pages/hello.py's bytes, the same frame as every example page
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Hello</title>'
    '<link rel="stylesheet" href="/style.css"><link rel="icon" href="/favicon.ico"></head>'
    '<body><header><a href="/">peer examples</a></header><main><h1>Hello, world!</h1></main>'
    '<footer><p>Served by <a href="/">a peer</a>, after SMLserver and Hop. '
    '<a href="/source?file=hello.py" class="source">View the source of this page</a></p>'
    "</footer></body></html>"
)
DATE = _page("<p>Today is {{ today }}.</p>")
CALENDAR = _page(
    '<div class="calendar">{% for m in months %}<div class="month">{{ m|safe }}</div>'
    "{% endfor %}</div>"
)
MUL = env.from_string(
    """<!DOCTYPE html>
<html><head><title>Multiplication table</title><link rel="stylesheet" href="/style.css"></head>
<body><h1>{{ n }} &times; {{ n }}</h1>
<table class="mul"><tr><th>&times;</th>{% for j in range(1, n + 1) %}<th>{{ j }}</th>{% endfor %}</tr>
{% for i in range(1, n + 1) %}<tr><th>{{ i }}</th>{% for j in range(1, n + 1) %}<td>{{ i * j }}</td>{% endfor %}</tr>
{% endfor %}</table>
</body></html>"""
)
TABLE = _page(
    "<table><tr><th>i</th><th>i²</th><th>text</th></tr>{% for i in range(1, 501) %}"
    "<tr><td>{{ i }}</td><td>{{ i * i }}</td><td>row {{ i }} &lt;of 500&gt;</td></tr>"
    "{% endfor %}</table>"
)
DBPAGE = _page("<p>The guest book has {{ count }} entries.</p>")
GUEST = _page(  # the frame of every page, as pages/guest.py's (its CSRF field aside)
    """<ul>
{% for email, name, comment in rows %}<li><i>{{ comment }}</i> -- <a href="mailto:{{ email }}">{{ name }}</a></li>
{% endfor %}</ul>
<h2>New comment</h2>
<form action="/guest_add" method="post">
<p><label>Name <input name="name" maxlength="100"></label>
<label>E-mail <input name="email" type="email" maxlength="100"></label></p>
<p><label>Comment<br><textarea name="comment" rows="3" cols="60" maxlength="2000"></textarea></label></p>
<p><input type="submit" value="Add"></p>
</form>"""
)
LOG = _page(
    "<table><tr><th>id</th><th>page</th><th>status</th><th>bytes</th></tr>{% for r in rows %}"
    "<tr><td>{{ r[0] }}</td><td>{{ r[1] }}</td><td>{{ r[2] }}</td><td>{{ r[3] }}</td></tr>"
    "{% endfor %}</table>"
)


def hello() -> str:
    return HELLO


def date() -> str:
    return DATE.render(title="Today", today=datetime.date.today().strftime("%A %d %B %Y"))


def calendar_page() -> str:
    today = datetime.date.today()
    formatter = calendar.HTMLCalendar(firstweekday=calendar.MONDAY)
    months, year, month = [], today.year, today.month
    for _ in range(13):
        months.append(formatter.formatmonth(year, month))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return CALENDAR.render(title="Calendar", months=months)


def mul(n_text: str | None) -> str:
    try:
        n = int(n_text) if n_text is not None else 10
    except ValueError:
        n = 10
    return MUL.render(n=max(1, min(n, 30)))


def table() -> str:
    return TABLE.render(title="Table")


def _query(sql: str) -> list[tuple]:
    connection = sqlite3.connect(DB)  # a connection per request, as Flask's tutorial does
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def db() -> str:
    (count,) = _query("SELECT count(*) FROM guest")[0]
    return DBPAGE.render(title="Database", count=count)


def guest() -> str:
    rows = _query("SELECT email, name, comment FROM guest ORDER BY id")
    return GUEST.render(title="Guest book", rows=rows)


def log() -> str:
    rows = _query("SELECT id, page, status, bytes FROM log ORDER BY id")
    return LOG.render(title="Log", rows=rows)


# --- Flask -----------------------------------------------------------------------------------

try:
    from flask import Flask, request
except ImportError:  # pragma: no cover - the Starlette run does not need Flask
    flask_app = None
else:
    flask_app = Flask(__name__)
    flask_app.add_url_rule("/hello", "hello", hello)
    flask_app.add_url_rule("/date", "date", date)
    flask_app.add_url_rule("/calendar", "calendar", calendar_page)
    flask_app.add_url_rule("/mul", "mul", lambda: mul(request.args.get("n")))
    flask_app.add_url_rule("/table", "table", table)
    flask_app.add_url_rule("/db", "db", db)
    flask_app.add_url_rule("/guest", "guest", guest)
    flask_app.add_url_rule("/log", "log", log)


# --- Starlette -------------------------------------------------------------------------------

try:
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route
except ImportError:  # pragma: no cover
    starlette_app = None
else:

    def _html(f):
        async def endpoint(request):
            return HTMLResponse(f())

        return endpoint

    def _html_in_thread(f):
        # Blocking database calls: a sync endpoint, which Starlette runs in its thread pool.
        def endpoint(request):
            return HTMLResponse(f())

        return endpoint

    async def _mul(request):
        return HTMLResponse(mul(request.query_params.get("n")))

    starlette_app = Starlette(
        routes=[
            Route("/hello", _html(hello)),
            Route("/date", _html(date)),
            Route("/calendar", _html(calendar_page)),
            Route("/mul", _mul),
            Route("/table", _html(table)),
            Route("/db", _html_in_thread(db)),
            Route("/guest", _html_in_thread(guest)),
            Route("/log", _html_in_thread(log)),
        ]
    )
