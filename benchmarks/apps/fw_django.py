"""The benchmark's URLs as a Django user writes them: Django's ASGI handler on uvicorn.

One file stands in for a project made by ``django-admin startproject``: its default
middleware, function views, and WhiteNoise for the static file (Django itself serves no
static files in production; WhiteNoise is the usual answer). ``DEBUG`` off, as deployed.
Django 5.2, the long-term release: Django 6 needs Python 3.12, and the benchmark's venvs
use the project's Python (3.11).
Run: ``uvicorn fw_django:app`` (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import os

import page
from django.conf import settings

page.check()
settings.configure(
    DEBUG=False,
    SECRET_KEY="benchmarks-only-not-a-secret-0123456789",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth",
                    "django.contrib.sessions", "django.contrib.messages"],
    MIDDLEWARE=[  # startproject's list, with WhiteNoise after SecurityMiddleware
        "django.middleware.security.SecurityMiddleware",
        "whitenoise.middleware.WhiteNoiseMiddleware",
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ],
    DATABASES={},
    WHITENOISE_ROOT=os.environ.get("BENCH_SITE_DIR", "."),
    USE_TZ=True,
)  # fmt: skip

import django  # noqa: E402 - after settings, as manage.py does

django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402


async def hello(request: HttpRequest) -> HttpResponse:
    return HttpResponse(page.HELLO, content_type="text/plain")


async def dynamic(request: HttpRequest) -> HttpResponse:
    return HttpResponse(page.next_page(), content_type="text/html; charset=utf-8")


async def hello_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(page.HELLO_PAGE, content_type="text/html; charset=utf-8")


async def guess(request: HttpRequest) -> HttpResponse:
    query = request.META.get("QUERY_STRING", "")
    return HttpResponse(page.guess_page(query), content_type="text/html; charset=utf-8")


urlpatterns = [
    path("hello", hello),
    path("dynamic", dynamic),
    path("page/hello", hello_page),
    path("svc/hello", hello_page),
    path("page/guess", guess),
    path("svc/guess", guess),
]
app = get_asgi_application()
