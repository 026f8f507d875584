"""The fixed ingredients of the demo organisation: names, streets, prices, crew and fleet.

Everything random about the demo (which customer, which day, which status) is drawn from these
lists with a seeded generator in `capataz.demo.load`, so the data is the same on every run.
Prices are ARS for 2026, before IVA.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from decimal import Decimal

SEED = 2026
PASSWORD = "capataz"

ORG = {
    "name": "Climatización Río de la Plata",
    "slug": "demo",
    "timezone": "America/Argentina/Buenos_Aires",
    "language": "es",
    "phone": "+541147812250",
    "email": "hola@climariodelaplata.com.ar",
    "address": "Av. del Libertador 6850, Núñez, CABA",
    "cuit": "30-71584963-8",
    "iva_condition": "responsable_inscripto",
    "point_of_sale": 1,
    "business_hours": {
        "mon": ["08:00", "18:00"],
        "tue": ["08:00", "18:00"],
        "wed": ["08:00", "18:00"],
        "thu": ["08:00", "18:00"],
        "fri": ["08:00", "18:00"],
        "sat": ["09:00", "13:00"],
        "sun": [],
    },
}


@dataclass(frozen=True)
class UserSpec:
    username: str
    role: str
    first_name: str
    last_name: str
    email: str
    superuser: bool = False


USERS = (
    UserSpec("operadora", "operator", "Lucía", "Paz", "operadora@climariodelaplata.com.ar"),
    UserSpec("gerente", "manager", "Roberto", "Iglesias", "gerente@climariodelaplata.com.ar"),
    UserSpec("admin", "admin", "Admin", "Capataz", "admin@climariodelaplata.com.ar", True),
)

IVA_GENERAL = Decimal("21")
# Reduced rate: equipment sold under the 10,5 % regime and gas work on a dwelling (obra sobre
# inmueble destinado a vivienda) — the two cases this company actually bills.
IVA_REDUCED = Decimal("10.5")


@dataclass(frozen=True)
class PriceSpec:
    code: str
    name: str
    name_en: str
    category: str
    price: int
    keywords: str
    iva: Decimal = IVA_GENERAL


PRICE_LIST = (
    PriceSpec(
        "visita-tecnica",
        "Visita técnica y diagnóstico",
        "Technical visit and diagnosis",
        "general",
        35000,
        "visita,diagnóstico,revisión,presupuesto,visit",
    ),
    PriceSpec(
        "urgencia",
        "Recargo por urgencia fuera de horario",
        "Out-of-hours emergency fee",
        "general",
        45000,
        "urgencia,guardia,emergencia,fin de semana,emergency",
    ),
    PriceSpec(
        "hora-adicional",
        "Hora adicional de trabajo",
        "Additional labour hour",
        "general",
        30000,
        "hora,adicional,mano de obra,hour",
    ),
    PriceSpec(
        "instalacion-split-3000",
        "Instalación split 3000 frigorías",
        "3000 frigorie split installation",
        "ac",
        190000,
        "instalación,split,aire,3000,frigorías,installation",
    ),
    PriceSpec(
        "instalacion-split-4500",
        "Instalación split 4500 frigorías",
        "4500 frigorie split installation",
        "ac",
        240000,
        "instalación,split,aire,4500,frigorías,installation",
    ),
    PriceSpec(
        "service-split",
        "Service y limpieza de split",
        "Split service and cleaning",
        "ac",
        60000,
        "service,mantenimiento,limpieza,split,aire,maintenance",
    ),
    PriceSpec(
        "carga-gas-r410a",
        "Carga de gas R410A",
        "R410A refrigerant recharge",
        "ac",
        110000,
        "carga,gas,refrigerante,r410a,recharge",
    ),
    PriceSpec(
        "desinstalacion-split",
        "Desinstalación de split",
        "Split removal",
        "ac",
        70000,
        "desinstalación,desinstalar,split,removal",
    ),
    PriceSpec(
        "equipo-split-3000",
        "Split inverter 3000 frigorías (equipo)",
        "3000 frigorie inverter split (unit)",
        "equipment",
        950000,
        "equipo,split,inverter,3000,unit",
        IVA_REDUCED,
    ),
    PriceSpec(
        "service-caldera",
        "Service de caldera",
        "Boiler service",
        "heating",
        95000,
        "service,caldera,mantenimiento,calefacción,boiler",
    ),
    PriceSpec(
        "reparacion-caldera",
        "Reparación de caldera (mano de obra)",
        "Boiler repair (labour)",
        "heating",
        140000,
        "reparación,caldera,boiler,repair",
    ),
    PriceSpec(
        "purga-radiadores",
        "Purga y revisión de radiadores",
        "Radiator bleeding and check",
        "heating",
        55000,
        "purga,radiadores,calefacción,radiator",
    ),
    PriceSpec(
        "reparacion-perdida-gas",
        "Reparación de pérdida de gas",
        "Gas leak repair",
        "gas",
        150000,
        "pérdida,fuga,gas,olor a gas,leak",
    ),
    PriceSpec(
        "prueba-hermeticidad",
        "Prueba de hermeticidad de gas",
        "Gas tightness test",
        "gas",
        120000,
        "hermeticidad,prueba,gas,matriculado,test",
    ),
    PriceSpec(
        "instalacion-calefon",
        "Instalación de calefón",
        "Water heater installation",
        "gas",
        130000,
        "instalación,calefón,agua caliente,water heater",
    ),
    PriceSpec(
        "service-calefon",
        "Service de calefón",
        "Water heater service",
        "gas",
        65000,
        "service,calefón,mantenimiento,water heater",
    ),
    PriceSpec(
        "cambio-termotanque",
        "Cambio de termotanque (mano de obra)",
        "Hot-water tank replacement (labour)",
        "gas",
        160000,
        "cambio,termotanque,agua caliente,tank",
    ),
    PriceSpec(
        "equipo-termotanque-80",
        "Termotanque a gas 80 litros (equipo)",
        "80-litre gas hot-water tank (unit)",
        "equipment",
        520000,
        "equipo,termotanque,80 litros,tank",
        IVA_REDUCED,
    ),
    PriceSpec(
        "instalacion-gas-vivienda",
        "Instalación de gas en vivienda (obra)",
        "Home gas installation (works)",
        "gas",
        850000,
        "instalación,gas,cañería,obra,vivienda,piping",
        IVA_REDUCED,
    ),
    PriceSpec(
        "destapacion",
        "Destapación de cañería",
        "Drain unblocking",
        "plumbing",
        85000,
        "destapación,destapar,cloaca,cañería,drain",
    ),
    PriceSpec(
        "reparacion-perdida-agua",
        "Reparación de pérdida de agua",
        "Water leak repair",
        "plumbing",
        70000,
        "pérdida,agua,canilla,flexible,goteo,leak",
    ),
    PriceSpec(
        "revision-tablero",
        "Revisión de tablero eléctrico",
        "Electrical panel inspection",
        "electrical",
        75000,
        "tablero,revisión,eléctrico,térmica,panel",
    ),
    PriceSpec(
        "cambio-disyuntor",
        "Cambio de disyuntor diferencial (con material)",
        "Residual-current breaker replacement (with parts)",
        "electrical",
        95000,
        "disyuntor,diferencial,térmica,salta,breaker",
    ),
    PriceSpec(
        "tomacorriente",
        "Instalación de tomacorriente",
        "Socket installation",
        "electrical",
        30000,
        "tomacorriente,enchufe,toma,socket",
    ),
)


@dataclass(frozen=True)
class ServiceSpec:
    """A kind of visit: the job's wording, its trade, how long it takes and what it bills."""

    label: str
    skill: str
    minutes: int
    weight: int
    lines: tuple[tuple[str, int], ...]
    extras: tuple[str, ...] = ()


SERVICES = (
    ServiceSpec("Instalación split 3000 frigorías", "ac", 180, 5, (("instalacion-split-3000", 1),)),
    ServiceSpec("Instalación split 4500 frigorías", "ac", 240, 3, (("instalacion-split-4500", 1),)),
    ServiceSpec("Service de split", "ac", 90, 8, (("service-split", 1),), ("carga-gas-r410a",)),
    ServiceSpec("Carga de gas R410A", "ac", 90, 4, (("carga-gas-r410a", 1),)),
    ServiceSpec(
        "Split no enfría: diagnóstico", "ac", 60, 4, (("visita-tecnica", 1),), ("carga-gas-r410a",)
    ),
    ServiceSpec("Desinstalación de split", "ac", 90, 1, (("desinstalacion-split", 1),)),
    ServiceSpec(
        "Service de caldera", "heating", 120, 5, (("service-caldera", 1),), ("purga-radiadores",)
    ),
    ServiceSpec(
        "Reparación de caldera",
        "heating",
        150,
        2,
        (("reparacion-caldera", 1),),
        ("hora-adicional",),
    ),
    ServiceSpec("Purga de radiadores", "heating", 90, 2, (("purga-radiadores", 1),)),
    ServiceSpec(
        "Reparación de pérdida de gas",
        "gas",
        120,
        3,
        (("reparacion-perdida-gas", 1),),
        ("prueba-hermeticidad",),
    ),
    ServiceSpec("Prueba de hermeticidad", "gas", 90, 2, (("prueba-hermeticidad", 1),)),
    ServiceSpec("Instalación de calefón", "gas", 150, 2, (("instalacion-calefon", 1),)),
    ServiceSpec("Service de calefón", "gas", 60, 4, (("service-calefon", 1),)),
    ServiceSpec("Cambio de termotanque", "gas", 180, 2, (("cambio-termotanque", 1),)),
    ServiceSpec(
        "Destapación de cañería", "plumbing", 90, 5, (("destapacion", 1),), ("hora-adicional",)
    ),
    ServiceSpec(
        "Reparación de pérdida de agua", "plumbing", 60, 5, (("reparacion-perdida-agua", 1),)
    ),
    ServiceSpec(
        "Revisión de tablero eléctrico",
        "electrical",
        90,
        4,
        (("revision-tablero", 1),),
        ("cambio-disyuntor",),
    ),
    ServiceSpec("Cambio de disyuntor diferencial", "electrical", 60, 3, (("cambio-disyuntor", 1),)),
    ServiceSpec("Instalación de tomacorrientes", "electrical", 90, 2, (("tomacorriente", 3),)),
)

# What a weekend on-call visit can be: only the urgent trades.
EMERGENCY_SERVICES = (
    "Reparación de pérdida de gas",
    "Destapación de cañería",
    "Reparación de pérdida de agua",
    "Split no enfría: diagnóstico",
)

# Quote bundles: the usual multi-line quotes an office sends.
QUOTE_BUNDLES: tuple[tuple[tuple[str, int], ...], ...] = (
    (("equipo-split-3000", 1), ("instalacion-split-3000", 1)),
    (("equipo-split-3000", 2), ("instalacion-split-3000", 2)),
    (("instalacion-split-4500", 1), ("carga-gas-r410a", 1)),
    (("service-caldera", 1), ("purga-radiadores", 1)),
    (("instalacion-gas-vivienda", 1), ("prueba-hermeticidad", 1)),
    (("equipo-termotanque-80", 1), ("cambio-termotanque", 1)),
    (("revision-tablero", 1), ("cambio-disyuntor", 1), ("tomacorriente", 4)),
    (("service-split", 3),),
    (("instalacion-calefon", 1), ("prueba-hermeticidad", 1)),
)

ZONES = ("CABA", "Norte", "Sur", "Oeste", "Este")

# (street, city) by zone; the house number is drawn per customer.
STREETS: dict[str, tuple[tuple[str, str], ...]] = {
    "CABA": (
        ("Av. Cabildo", "CABA"),
        ("Juramento", "CABA"),
        ("Av. Rivadavia", "CABA"),
        ("Av. Santa Fe", "CABA"),
        ("Gorriti", "CABA"),
        ("Av. Corrientes", "CABA"),
        ("Thames", "CABA"),
        ("Av. Triunvirato", "CABA"),
        ("Bolívar", "CABA"),
        ("Av. San Juan", "CABA"),
        ("Olazábal", "CABA"),
        ("Av. Directorio", "CABA"),
    ),
    "Norte": (
        ("Av. Maipú", "Vicente López"),
        ("Av. Santa Fe", "Martínez"),
        ("Belgrano", "San Isidro"),
        ("Av. Libertador", "Olivos"),
        ("Cazón", "Tigre"),
        ("Constitución", "San Fernando"),
        ("Av. Centenario", "Beccar"),
    ),
    "Sur": (
        ("Av. Hipólito Yrigoyen", "Lanús"),
        ("Laprida", "Lomas de Zamora"),
        ("Maipú", "Banfield"),
        ("Esteban Adrogué", "Adrogué"),
        ("Av. Meeks", "Temperley"),
        ("Av. Pavón", "Lanús"),
    ),
    "Oeste": (
        ("Av. Rivadavia", "Ramos Mejía"),
        ("Sarmiento", "Morón"),
        ("Av. Gaona", "Haedo"),
        ("Arias", "Castelar"),
        ("Brandsen", "Ituzaingó"),
        ("Belgrano", "San Justo"),
    ),
    "Este": (
        ("Av. Mitre", "Avellaneda"),
        ("Rivadavia", "Quilmes"),
        ("Av. San Martín", "Bernal"),
        ("Calle 14", "Berazategui"),
        ("Las Flores", "Wilde"),
        ("Av. Calchaquí", "Quilmes"),
    ),
}

UNITS = ("", "", "", "PB", "1° A", "2° B", "3° C", "4° A", "5° D", "7° B", "9° A", "Casa 2")

_FEMALE_FIRST = (
    "María Laura Silvia Graciela Carolina Florencia Valeria Natalia Paula Mariana Romina "
    "Gabriela Agustina Camila Verónica Claudia"
)
FEMALE_FIRST = tuple(_FEMALE_FIRST.split())
_MALE_FIRST = (
    "Juan Jorge Ricardo Fernando Alejandro Marcelo Gustavo Eduardo Federico Santiago Matías "
    "Sebastián Daniel Héctor Osvaldo Tomás"
)
MALE_FIRST = tuple(_MALE_FIRST.split())
_SURNAMES = (
    "González Rodríguez Fernández López Martínez García Pérez Sánchez Romero Díaz Álvarez "
    "Torres Ruiz Ramírez Flores Benítez Suárez Castro Ortiz Rossi Ferrari Bianchi Quiroga "
    "Aguirre Pereyra Villalba Cabrera Ledesma Ibarra Ponce"
)
SURNAMES = tuple(_SURNAMES.split())

EMAIL_DOMAINS = ("gmail.com", "gmail.com", "hotmail.com", "yahoo.com.ar", "outlook.com")

# (name, zone, email domain): shops, offices and institutions billed as companies.
COMPANIES = (
    ("Panadería La Espiga SRL", "CABA", "laespiga.com.ar"),
    ("Farmacia Santa Rita SRL", "Oeste", "farmaciasantarita.com.ar"),
    ("Parrilla El Quincho de Núñez SRL", "CABA", "elquincho.com.ar"),
    ("Gimnasio Fuerza Sur SRL", "Sur", "fuerzasur.com.ar"),
    ("Jardín de Infantes Los Girasoles", "Norte", "losgirasoles.edu.ar"),
    ("Hotel Plaza Castelar SA", "Oeste", "hotelplazacastelar.com.ar"),
    ("Clínica Veterinaria Patitas SRL", "Norte", "patitasvet.com.ar"),
    ("Estudio Contable Ferreyra & Asociados", "CABA", "estudioferreyra.com.ar"),
    ("Supermercado Los Hermanos SRL", "Este", "loshermanos.com.ar"),
    ("Heladería Il Gelato Quilmes SRL", "Este", "ilgelato.com.ar"),
    ("Lavadero Burbujas SRL", "Sur", "lavaderoburbujas.com.ar"),
    ("Pizzería Los Campeones SRL", "Oeste", "loscampeones.com.ar"),
    ("Distribuidora Norte Frío SA", "Norte", "nortefrio.com.ar"),
)

# (street with number, city, zone): the building is the customer.
CONSORCIOS = (
    ("Av. Cabildo 2150", "CABA", "CABA"),
    ("Juramento 1875", "CABA", "CABA"),
    ("Av. Rivadavia 6420", "CABA", "CABA"),
    ("Av. Santa Fe 3312", "CABA", "CABA"),
    ("Av. Maipú 1240", "Vicente López", "Norte"),
    ("Laprida 455", "Lomas de Zamora", "Sur"),
    ("Sarmiento 780", "Morón", "Oeste"),
    ("Rivadavia 310", "Quilmes", "Este"),
)

PERSON_COUNT = 32


@dataclass(frozen=True)
class TechSpec:
    name: str
    phone: str
    skills: tuple[str, ...]
    zone: str
    start: datetime.time
    end: datetime.time
    days: tuple[int, ...]


_8, _9, _16, _17, _18 = (datetime.time(h) for h in (8, 9, 16, 17, 18))
MON_FRI = (0, 1, 2, 3, 4)
MON_SAT = (0, 1, 2, 3, 4, 5)

TECHNICIANS = (
    TechSpec("Martín Sosa", "+5491145123387", ("ac", "electrical"), "CABA", _8, _17, MON_FRI),
    TechSpec(
        "Diego Fernández",
        "+5491144209915",
        ("gas", "heating", "plumbing"),
        "CABA",
        _8,
        _17,
        MON_SAT,
    ),
    TechSpec("Lucas Romero", "+5491156331042", ("ac",), "Norte", _9, _18, MON_FRI),
    TechSpec("Sergio Benítez", "+5491147892210", ("plumbing", "gas"), "Norte", _8, _16, MON_SAT),
    TechSpec("Walter Acosta", "+5491143017764", ("heating", "gas"), "Sur", _8, _17, MON_FRI),
    TechSpec("Gustavo Medina", "+5491160124478", ("electrical", "ac"), "Sur", _8, _17, MON_SAT),
    TechSpec("Pablo Herrera", "+5491146550931", ("ac", "heating"), "Oeste", _8, _17, MON_FRI),
    TechSpec(
        "Nicolás Castro",
        "+5491144886120",
        ("plumbing", "electrical"),
        "Oeste",
        _9,
        _18,
        MON_FRI,
    ),
    TechSpec(
        "Ramiro Giménez",
        "+5491142528803",
        ("gas", "plumbing", "heating"),
        "Este",
        _8,
        _17,
        MON_SAT,
    ),
    TechSpec("Valeria Ruiz", "+5491159773316", ("electrical", "ac"), "Este", _8, _16, MON_FRI),
    # The weekend on-call technician: Wednesday to Sunday, emergencies on Sundays.
    TechSpec(
        "Hernán Molina",
        "+5491141235590",
        ("gas", "plumbing", "ac", "heating"),
        "CABA",
        _9,
        _18,
        (2, 3, 4, 5, 6),
    ),
)

ABSENT_TECHNICIAN = "Walter Acosta"
ABSENCE_REASON = "Licencia médica: cirugía programada"


@dataclass(frozen=True)
class VehicleSpec:
    plate: str
    kind: str
    fuel: str
    description: str
    driver: str | None


VEHICLES = (
    VehicleSpec("AE417KD", "van", "diesel", "Renault Kangoo II blanca", "Martín Sosa"),
    VehicleSpec("AD882TR", "van", "cng", "Fiat Fiorino con equipo de GNC", "Diego Fernández"),
    VehicleSpec("OKN512", "pickup", "diesel", "Toyota Hilux 4x2 con caja cerrada", "Lucas Romero"),
    VehicleSpec(
        "AF093HB", "van", "diesel", "Peugeot Partner con escalera en techo", "Walter Acosta"
    ),
    VehicleSpec(
        "MLP238", "car", "petrol", "Volkswagen Gol Trend (visitas y presupuestos)", "Pablo Herrera"
    ),
    VehicleSpec(
        "AC651JN", "pickup", "petrol", "Volkswagen Saveiro cabina simple", "Ramiro Giménez"
    ),
    VehicleSpec("KJH904", "van", "cng", "Renault Kangoo con GNC (pool)", None),
    VehicleSpec("AG220LS", "van", "diesel", "Renault Master furgón (obras grandes)", None),
)


@dataclass(frozen=True)
class EquipmentSpec:
    kind: str
    skill: str
    brands: tuple[str, ...]
    interval_months: int
    models: tuple[str, ...] = field(default=("",))


EQUIPMENT = (
    EquipmentSpec(
        "Split 3000 frigorías",
        "ac",
        ("Surrey", "BGH", "Samsung", "LG", "Midea"),
        12,
        ("Inverter 3400W", "Frío/calor 3200W", "Silent Air 3000"),
    ),
    EquipmentSpec(
        "Split 4500 frigorías",
        "ac",
        ("Surrey", "Carrier", "BGH", "Philco"),
        12,
        ("Inverter 5100W", "Frío/calor 5200W"),
    ),
    EquipmentSpec(
        "Caldera mural",
        "heating",
        ("Peisa", "Baxi", "Ariston"),
        12,
        ("Diva Tecno 24", "Eco 4S 24F", "Clas One 24"),
    ),
    EquipmentSpec(
        "Calefón",
        "gas",
        ("Orbis", "Longvie", "Rheem"),
        12,
        ("14 L tiro natural", "12 L tiro balanceado"),
    ),
    # Building boilers are serviced twice a year.
    EquipmentSpec(
        "Caldera central", "heating", ("Caldain", "Peisa"), 6, ("Ecotherm 200", "CCA 120")
    ),
    EquipmentSpec(
        "Termotanque",
        "gas",
        ("Rheem", "Señorial", "Escorial"),
        24,
        ("80 L a gas", "120 L a gas", "50 L eléctrico"),
    ),
)

JOB_NOTES = (
    "Tocar timbre del portero, el encargado tiene la llave de la terraza.",
    "Hay perro en el patio: avisar antes de entrar.",
    "La clienta pide factura A a nombre de la empresa.",
    "Llevar escalera larga: la unidad exterior está en altura.",
    "Estacionar en la cochera del edificio, lugar 12.",
    "El cliente trabaja desde casa: confirmar por WhatsApp 30 minutos antes.",
    "Edificio con horario de obra restringido: de 9 a 12.",
    "Presupuesto aprobado por mail.",
)

CANCEL_REASONS = (
    "El cliente canceló: viaja esa semana.",
    "El cliente lo resolvió por su cuenta.",
    "El cliente consiguió otro técnico.",
    "Se reprogramará cuando llegue el repuesto.",
)


@dataclass(frozen=True)
class TicketSpec:
    reason: str
    priority: str
    status: str
    summary: str
    days_ago: int
    service_hint: str = ""


TICKETS = (
    TicketSpec(
        "complaint",
        "high",
        "open",
        "Reclama que el técnico llegó dos horas tarde y no avisó. Pide un descuento.",
        2,
        "Service de split",
    ),
    TicketSpec(
        "complaint",
        "normal",
        "in_progress",
        "Dice que se le cobró dos veces la visita técnica en la última factura.",
        6,
    ),
    TicketSpec(
        "emergency",
        "urgent",
        "resolved",
        "Olor a gas en la cocina: se indicó cerrar la llave general y se envió la guardia.",
        9,
        "Reparación de pérdida de gas",
    ),
    TicketSpec(
        "escalate",
        "normal",
        "open",
        "Pide hablar con un supervisor por el presupuesto de la instalación de gas.",
        1,
    ),
    TicketSpec(
        "frustration",
        "low",
        "resolved",
        "Cliente molesto por tres reprogramaciones seguidas; se le ofreció prioridad.",
        14,
    ),
    TicketSpec(
        "handoff",
        "normal",
        "open",
        "El copiloto derivó una consulta de garantía por un equipo instalado por otra empresa.",
        0,
    ),
)
