"""Django serving TechEmpower's test types over SQLite or PostgreSQL, in one file: settings, two models
and their views, through the ORM and Django's template engine (as a Django app would).
Django keeps a connection per worker thread (CONN_MAX_AGE None: held, not per request)."""

import os
import random
import sys
from pathlib import Path

# Servers given the app's file (uWSGI's --wsgi-file, mod_wsgi) do not put its directory on
# the path, as servers given a module and a directory do; a WSGI file commonly does it itself.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import world  # noqa: E402  (before the frameworks: puts their directory on the path)

# isort: split
from django.conf import settings  # noqa: E402

settings.configure(
    DEBUG=False,
    SECRET_KEY="serverbench: no sessions, no secrets",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=["django.middleware.common.CommonMiddleware"],  # as a project has it (Content-Length)
    INSTALLED_APPS=[],
    USE_TZ=False,
    DEFAULT_AUTO_FIELD="django.db.models.AutoField",
    DATABASES={"default": world.django_database()},
    TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates",
                "DIRS": [str(Path(__file__).parent / "templates")]}],
)  # fmt: skip

import django  # noqa: E402

django.setup()

from django.db import models, transaction  # noqa: E402
from django.http import HttpResponse, JsonResponse  # noqa: E402
from django.shortcuts import render  # noqa: E402
from django.urls import path  # noqa: E402


class World(models.Model):
    randomNumber = models.IntegerField()  # noqa: N815 (TechEmpower's column)

    class Meta:
        app_label = "world"
        db_table = "World"


class Fortune(models.Model):
    message = models.TextField()

    class Meta:
        app_label = "world"
        db_table = "Fortune"


def _as_dict(row: World) -> dict:
    return {"id": row.id, "randomNumber": row.randomNumber}


def plaintext(request):
    return HttpResponse("Hello, World!", content_type="text/plain")


def json(request):
    return JsonResponse({"message": "Hello, World!"})


def single_query(request):
    return JsonResponse(_as_dict(World.objects.get(id=world.random_id())))


def queries(request):
    ids = world.random_ids(world.query_count(request.GET.get("queries")))
    return JsonResponse([_as_dict(World.objects.get(id=i)) for i in ids], safe=False)


def updates(request):
    rows = [World.objects.get(id=i) for i in world.random_ids(world.query_count(request.GET.get("queries")))]
    for row in rows:
        row.randomNumber = random.randint(1, world.WORLD_ROWS)
    with transaction.atomic():
        World.objects.bulk_update(rows, ["randomNumber"])
    return JsonResponse([_as_dict(row) for row in rows], safe=False)


def fortunes(request):
    rows = world.sorted_fortunes(Fortune.objects.values_list("id", "message"))
    return render(request, "fortunes-django.html", {"fortunes": [{"id": i, "message": m} for i, m in rows]})


urlpatterns = [
    path("plaintext", plaintext),
    path("json", json),
    path("db", single_query),
    path("queries", queries),
    path("updates", updates),
    path("fortunes", fortunes),
]

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
