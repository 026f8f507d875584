"""Availability over real rows: working windows, absences, open jobs, zones and ordering."""

from __future__ import annotations

import datetime

import pytest

from business import scheduling
from business.models import Job
from tests import factories
from tests.business.conftest import BA, at

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("english")]


def test_zone_names_aliases_and_localities_fold_to_one_zone() -> None:
    assert scheduling.zone_for("zona sur") == "Sur"
    assert scheduling.zone_for("Capital Federal") == "CABA"
    assert scheduling.zone_for("LANÚS") == "Sur"
    assert scheduling.zone_for("Vicente López") == "Norte"
    assert scheduling.zone_for("Este") == "La Plata"
    assert scheduling.zone_for("Mar del Plata") is None
    assert "zona sur" in scheduling.zone_aliases("Sur")


@pytest.mark.parametrize(
    ("a", "b", "hops"),
    [
        ("Sur", "sur", 0),
        ("CABA", "Norte", 1),
        ("Sur", "La Plata", 1),
        ("La Plata", "CABA", 2),
        ("La Plata", "Norte", 3),
        ("Sur", "Rosario", 9),
        (None, "Sur", 9),
    ],
)
def test_zone_distance_counts_hops_in_the_adjacency_table(a: str | None, b: str, hops: int) -> None:
    assert scheduling.zone_distance(a, b) == hops


def test_work_window_is_technician_hours_within_business_hours(org, monday) -> None:
    tech = factories.make_technician(org, work_start=datetime.time(7), work_end=datetime.time(19))
    assert scheduling.work_window(org, tech, monday) == (at(monday, 8), at(monday, 18))
    saturday = monday + datetime.timedelta(days=5)
    assert scheduling.work_window(org, tech, saturday) == (at(saturday, 9), at(saturday, 13))
    assert scheduling.work_window(org, tech, monday + datetime.timedelta(days=6)) is None
    tech.work_days = [1, 2]
    assert scheduling.work_window(org, tech, monday) is None


def test_free_slots_fill_the_day_around_open_jobs(org, monday) -> None:
    tech = factories.make_technician(org)
    customer = factories.make_customer(org)
    factories.make_job(org, customer, at(monday, 10), technician=tech)
    factories.make_job(org, customer, at(monday, 8), technician=tech, status=Job.Status.CANCELLED)
    slots = scheduling.free_slots(org, day_from=monday, after=at(monday, 0))
    assert [s.start.astimezone(BA).hour for s in slots] == [8, 12, 13, 14, 15]
    assert all(s.end - s.start == datetime.timedelta(hours=2) for s in slots)
    assert all(s.technician == tech for s in slots)


def test_free_slots_are_aware_and_in_the_organisation_timezone(org, monday) -> None:
    factories.make_technician(org)
    first = scheduling.free_slots(org, day_from=monday, after=at(monday, 0), limit=1)[0]
    assert first.start.utcoffset() is not None
    assert first.start == datetime.datetime(
        monday.year, monday.month, monday.day, 11, tzinfo=datetime.UTC
    )


def test_free_slots_skip_absences_past_times_and_other_trades(org, monday) -> None:
    tech = factories.make_technician(org, skills=["ac"])
    factories.make_technician(org, "Plomero", skills=["plumbing"])
    tuesday = monday + datetime.timedelta(days=1)
    factories.make_absence(org, tech, monday)
    slots = scheduling.free_slots(
        org, day_from=monday, day_to=tuesday, skill="ac", after=at(tuesday, 13, 30)
    )
    assert [s.start for s in slots] == [at(tuesday, 14), at(tuesday, 15)]


def test_free_slots_order_by_time_then_zone(org, monday) -> None:
    factories.make_technician(org, "Ana Centro", zone="CABA")
    factories.make_technician(org, "Beto Sur", zone="Sur")
    factories.make_technician(org, "Carla Plata", zone="La Plata")
    slots = scheduling.free_slots(org, day_from=monday, zone="Lanús", after=at(monday, 0), limit=3)
    assert [(s.technician.name, s.zone_distance) for s in slots] == [
        ("Beto Sur", 0),
        ("Ana Centro", 1),
        ("Carla Plata", 1),
    ]
    assert {s.start for s in slots} == {at(monday, 8)}


def test_free_slots_never_show_another_organisations_technicians(cast, monday) -> None:
    factories.make_technician(cast.other_org, "Ajeno")
    assert scheduling.free_slots(cast.org, day_from=monday, after=at(monday, 0)) == []


def test_next_free_slots_offers_distinct_times_after_a_full_day(org, monday) -> None:
    tech = factories.make_technician(org)
    customer = factories.make_customer(org)
    factories.make_job(org, customer, at(monday, 8), hours=9, technician=tech)
    slots = scheduling.next_free_slots(org, after=at(monday, 7), count=3)
    tuesday = monday + datetime.timedelta(days=1)
    assert [s.start for s in slots] == [at(tuesday, 8), at(tuesday, 9), at(tuesday, 10)]


def test_next_free_slots_returns_what_exists_within_the_horizon(org, monday) -> None:
    assert scheduling.next_free_slots(org, after=at(monday, 7), horizon_days=7) == []


def test_technicians_free_only_lists_those_free_for_the_whole_interval(org, monday) -> None:
    busy = factories.make_technician(org, "Ocupado", zone="Sur")
    near = factories.make_technician(org, "Cercano", zone="Sur")
    far = factories.make_technician(org, "Lejano", zone="Norte")
    factories.make_technician(org, "Inactivo", zone="Sur", active=False)
    factories.make_technician(org, "Gasista", zone="Sur", skills=["gas"])
    customer = factories.make_customer(org)
    factories.make_job(org, customer, at(monday, 11), technician=busy)
    factories.make_job(org, customer, at(monday, 15), technician=near)
    free = scheduling.technicians_free(org, at(monday, 10), at(monday, 12), "ac", zone="Sur")
    assert free == [near, far]


def test_technicians_free_spreads_work_to_the_least_loaded(org, monday) -> None:
    loaded = factories.make_technician(org, "Aaron", zone="Sur")
    idle = factories.make_technician(org, "Zoe", zone="Sur")
    factories.make_job(org, factories.make_customer(org), at(monday, 14), technician=loaded)
    assert scheduling.technicians_free(org, at(monday, 8), at(monday, 10), zone="Sur") == [
        idle,
        loaded,
    ]


def test_nearest_free_technician_prefers_same_zone_then_neighbours(org, monday) -> None:
    plata = factories.make_technician(org, "Plata", zone="La Plata")
    caba = factories.make_technician(org, "Centro", zone="CABA")
    norte = factories.make_technician(org, "Norte", zone="Norte")
    start = at(monday, 9)
    assert scheduling.nearest_free_technician(org, "Norte", "ac", start) == norte
    assert scheduling.nearest_free_technician(org, "Berisso", "ac", start) == plata
    factories.make_absence(org, plata, monday)
    assert scheduling.nearest_free_technician(org, "La Plata", "ac", start) == caba
    assert scheduling.nearest_free_technician(org, "Sur", "gas", start) is None


@pytest.mark.parametrize(
    ("change", "hour", "expected"),
    [
        ({"active": False}, 9, "not an active technician"),
        ({"skills": ["gas"]}, 9, "does not do that kind of work"),
        ({"work_days": [2, 3]}, 9, "does not work on"),
        ({}, 16, "outside"),
    ],
)
def test_technician_problem_says_why_in_words(org, monday, change, hour, expected) -> None:
    tech = factories.make_technician(org, **change)
    problem = scheduling.technician_problem(
        org, tech, at(monday, hour), at(monday, hour + 2), skill="ac"
    )
    assert problem is not None and expected in problem


def test_technician_problem_sees_absences_and_clashes(org, monday) -> None:
    tech = factories.make_technician(org)
    job = factories.make_job(org, factories.make_customer(org), at(monday, 9), technician=tech)
    clash = scheduling.technician_problem(org, tech, at(monday, 10), at(monday, 12))
    assert clash is not None and "already has a job" in clash
    assert (
        scheduling.technician_problem(
            org, tech, at(monday, 10), at(monday, 12), exclude_job_ids=[job.pk]
        )
        is None
    )
    factories.make_absence(org, tech, monday, reason="gripe")
    absent = scheduling.technician_problem(org, tech, at(monday, 13), at(monday, 15))
    assert absent is not None and "absent" in absent
