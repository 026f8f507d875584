"""Slot values the phrase families are filled with: dates, times, amounts, CUITs, services, and
fallback names for an organisation with few records.

Every value carries its surface form and the label the evaluation expects (PRODUCT.md): a date's
ISO day against the corpus's reference date (2026-11-18, a Wednesday, as the golden set), a time
"HH:MM", an amount as a plain number, a CUIT NN-NNNNNNNN-N. tests/nlu/test_corpus.py checks that
the engine's own finders read every value this way, so the labels cannot drift from the rules.
"""

from __future__ import annotations

import datetime

# The golden set's reference day: relative dates below are labelled against it.
REFERENCE_DATE = datetime.date(2026, 11, 18)


def _day(offset: int) -> str:
    return (REFERENCE_DATE + datetime.timedelta(days=offset)).isoformat()


# (surface, ISO). Spanish d/m is day/month; English month names avoid the d/m–m/d ambiguity.
DATES_ES: tuple[tuple[str, str], ...] = (
    ("mañana", _day(1)), ("pasado mañana", _day(2)), ("el viernes", _day(2)),
    ("el lunes", _day(5)), ("el martes", _day(6)), ("el jueves", _day(1)),
    ("el sábado", _day(3)), ("el 15/12", "2026-12-15"), ("el 2/12", "2026-12-02"),
    ("el lunes 23", _day(5)), ("el martes 24", _day(6)), ("el 10 de diciembre", "2026-12-10"),
    ("el 27", _day(9)), ("hoy", _day(0)),
)  # fmt: skip
DATES_EN: tuple[tuple[str, str], ...] = (
    ("tomorrow", _day(1)), ("on Friday", _day(2)), ("on Monday", _day(5)),
    ("on Tuesday", _day(6)), ("on Thursday", _day(1)), ("today", _day(0)),
    ("on December 15", "2026-12-15"), ("on Dec 2", "2026-12-02"), ("on the 27th", _day(9)),
)  # fmt: skip
# A weekday with its number, across a month's end too ("el martes 1"): a date, never a
# person's name. Drawn for train lines only (nlu.corpus.generate), so held-out lines stay put.
WEEKDAY_DATES_ES: tuple[tuple[str, str], ...] = (
    ("el jueves 19", _day(1)), ("el viernes 20", _day(2)), ("el martes 1", "2026-12-01"),
    ("el jueves 3 de diciembre", "2026-12-03"), ("el lunes 7", "2026-12-07"),
    ("el sábado 21", _day(3)), ("el miércoles 2", "2026-12-02"),
)  # fmt: skip
WEEKDAY_DATES_EN: tuple[tuple[str, str], ...] = (
    ("on Tuesday the 1st", "2026-12-01"), ("on Thursday 19", _day(1)),
    ("on Monday, December 7", "2026-12-07"), ("on Wednesday the 2nd", "2026-12-02"),
)  # fmt: skip
TIMES_ES: tuple[tuple[str, str], ...] = (
    ("a las 10hs", "10:00"), ("a las 9", "09:00"), ("a las 15", "15:00"), ("9:30", "09:30"),
    ("a las 14:30", "14:30"), ("8hs", "08:00"), ("a las 11", "11:00"), ("16hs", "16:00"),
)  # fmt: skip
TIMES_EN: tuple[tuple[str, str], ...] = (
    ("at 10am", "10:00"), ("at 3pm", "15:00"), ("at 9:30", "09:30"), ("at 2:30pm", "14:30"),
    ("at 11am", "11:00"), ("at 4pm", "16:00"),
)  # fmt: skip
AMOUNTS_ES: tuple[tuple[str, str], ...] = (
    ("15 lucas", "15000"), ("210k", "210000"), ("$45.000", "45000"), ("$ 120.000", "120000"),
    ("80 mil pesos", "80000"), ("$9.500", "9500"),
)  # fmt: skip
AMOUNTS_EN: tuple[tuple[str, str], ...] = (
    ("$45,000", "45000"), ("120k", "120000"), ("$9,500", "9500"), ("80,000 pesos", "80000"),
)  # fmt: skip
# Valid CUITs (mod-11 check digit), written as people type them.
CUITS: tuple[tuple[str, str], ...] = (
    ("20-12345678-6", "20-12345678-6"), ("30712345675", "30-71234567-5"),
    ("27-28765432-6", "27-28765432-6"), ("20.30111222.9", "20-30111222-9"),
)  # fmt: skip
SERVICES_ES: tuple[str, ...] = (
    "instalación de split", "service de caldera", "reparación de calefón",
    "cambio de termotanque", "destapación de cloaca", "mantenimiento de aire acondicionado",
    "carga de gas", "revisión de tablero eléctrico", "limpieza de split",
    "instalación de gas", "reparación de caldera",
)  # fmt: skip
SERVICES_EN: tuple[str, ...] = (
    "AC repair", "boiler service", "water heater installation", "drain cleaning",
    "heating checkup", "split unit installation", "furnace inspection",
)  # fmt: skip
# Used when the organisation has no records (a fresh install, the shipped registry's evaluation).
# None of these names is in the golden set, so scoring it measures no memorised name.
CUSTOMERS: tuple[str, ...] = (
    "Walter Saavedra", "Noelia Villafañe", "Hugo Ocampo", "Romina Cabral", "Valeria Godoy",
    "Mirta Zalazar", "Brenda Maidana", "Facundo Toloza", "Lorena Lescano", "Eduardo Olmedo",
)  # fmt: skip
TECHNICIANS: tuple[str, ...] = (
    "Franco Pacheco", "Ignacio Quintana", "Gonzalo Rivero", "Marcelo Figueroa", "Rocío Escobar",
)  # fmt: skip
# Names the entity tagger also trains on, so it learns where names go rather than which names
# (nlu.corpus.varied_records): first names × surnames, none of them in the golden set.
FIRST_NAMES: tuple[str, ...] = (
    "Agustina", "Milagros", "Bautista", "Benjamín", "Florencia", "Alicia", "Rolando", "Susana",
    "Walter", "Noelia", "Hugo", "Romina", "Valeria", "Mirta", "Brenda", "Facundo",
)  # fmt: skip
SURNAMES: tuple[str, ...] = (
    "Ayala", "Sánchez", "Leiva", "Sotelo", "Domínguez", "Aguilera", "Montenegro", "Barrios",
    "Escobar", "Pacheco", "Quintana", "Rivero", "Godoy", "Cabral", "Ocampo", "Saavedra",
)  # fmt: skip
STREETS: tuple[str, ...] = (
    "Av. Cabildo 2150", "Corrientes 1234", "Av. San Martín 1450", "Thames 850", "Gurruchaga 320",
)  # fmt: skip

# A person's own life (the train-only hard negatives of nlu/corpus/families.py): other
# companies, relatives, teams. Never an entity.
UTILITIES: tuple[str, ...] = (
    "Edenor", "Edesur", "Metrogas", "Naturgy", "AySA", "Telecentro", "Movistar", "Personal",
    "Claro", "Camuzzi", "Fibertel", "Flow",
)  # fmt: skip
RELATIVES_ES: tuple[str, ...] = (
    "mi vieja", "mi viejo", "mi hermana", "mi cuñado", "mi suegra", "mi tía", "mi hijo",
    "mi abuela", "mi primo", "mi novia",
)  # fmt: skip
RELATIVES_EN: tuple[str, ...] = (
    "mom", "dad", "sister", "brother-in-law", "grandma", "son", "aunt", "cousin",
)  # fmt: skip
TEAMS: tuple[str, ...] = (
    "River", "Boca", "Racing", "Independiente", "San Lorenzo", "Huracán", "Vélez", "Estudiantes",
)  # fmt: skip
