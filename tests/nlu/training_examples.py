"""A small, self-contained training set for the engine's tests (the product trains on the registry).

Written for the tests only: a few es/en utterances per default intent, so router behaviour can be
checked without the database or the shipped registry file.
"""

from __future__ import annotations

from agents.defaults import default_specs
from nlu import Example
from nlu.values import IntentSpecs

_DATA: dict[str, tuple[str, list[str], list[str]]] = {
    "book_job": (
        "scheduling",
        [
            "agendá una visita para el cliente mañana a las 9",
            "necesito sacar un turno para instalar un aire",
            "anotame un trabajo de reparación de calefón para el lunes",
            "programá un service de caldera para el jueves",
            "reservame un turno para la semana que viene",
            "cargá una visita técnica en lo de Fernández",
            "quiero agendar una destapación para el viernes",
            "poné una instalación de split el martes a la tarde",
        ],
        [
            "book a visit for tomorrow morning",
            "schedule an AC repair for Monday",
            "I need an appointment to fix the boiler",
            "set up a maintenance visit next week",
            "put down a job for the customer on Friday",
        ],
    ),
    "reschedule": (
        "scheduling",
        [
            "pasá el turno del martes al jueves",
            "cambiá la visita para otro día",
            "reprogramá el trabajo de mañana para el viernes",
            "corré la cita de la tarde para el lunes",
            "mové la visita de Gómez a la semana que viene",
        ],
        [
            "move my appointment to Thursday",
            "reschedule the visit to next week",
            "can we change the job to another day",
            "push the boiler repair to Monday",
        ],
    ),
    "cancel_job": (
        "scheduling",
        [
            "cancelá el turno del viernes",
            "anulá la visita de mañana",
            "suspendé el trabajo en lo de Pérez",
            "ya no necesitamos la visita, bajala",
            "borrá la cita del lunes",
        ],
        [
            "cancel tomorrow's appointment",
            "please cancel the job for Friday",
            "we don't need the visit anymore, cancel it",
            "call off the repair on Monday",
        ],
    ),
    "check_availability": (
        "scheduling",
        [
            "¿hay lugar el jueves a la mañana?",
            "qué técnicos están libres mañana",
            "tenés disponibilidad esta semana",
            "fijate si queda algún turno libre el lunes",
            "¿quién puede ir el viernes?",
        ],
        [
            "any free slots on Thursday?",
            "which technicians are available tomorrow",
            "is there availability next week",
            "who can go on Friday afternoon?",
        ],
    ),
    "create_customer": (
        "customer",
        [
            "dá de alta un cliente nuevo",
            "registrá a Laura Castro como clienta, teléfono 11 5555 1234",
            "creá el cliente Horacio Ríos con dirección en Balvanera",
            "cargá un cliente nuevo con su CUIT",
            "agregá a la empresa Frigorífico Sur a la base",
            "es un cliente nuevo, anotalo",
        ],
        [
            "add a new customer",
            "create a client called Peter Brown",
            "register this customer with phone 555 0100",
            "new customer, please save their details",
        ],
    ),
    "search_customer": (
        "customer",
        [
            "buscá al cliente Álvarez",
            "mostrame los datos de la señora Acosta",
            "qué historial tiene el cliente de la calle Paraguay",
            "traeme la ficha de Frigorífico Sur",
            "¿tenemos registrado a Medina?",
        ],
        [
            "look up the customer Brown",
            "show me the details for this client",
            "find the account of the bakery",
            "what history do we have with Mr. Lee",
        ],
    ),
    "update_customer": (
        "customer",
        [
            "cambiá el teléfono del cliente",
            "actualizá la dirección de Álvarez",
            "modificá el mail de la clienta",
            "corregí el número de celular de Acosta",
            "se mudó, poné la nueva dirección",
        ],
        [
            "update the customer's phone number",
            "change the address for Mr. Lee",
            "edit the client's email",
            "fix the contact details of the bakery",
        ],
    ),
    "validate_cuit": (
        "customer",
        [
            "validá el cuit 20-12345678-6",
            "¿es válido este CUIT?",
            "chequeá si el cuit está bien",
            "verificá el número de CUIT del cliente",
        ],
        [
            "validate this CUIT",
            "is this tax id valid?",
            "check the CUIT number",
        ],
    ),
    "generate_quote": (
        "financial",
        [
            "armá un presupuesto para instalar dos splits",
            "hacele una cotización al cliente",
            "necesito un presupuesto por el cambio de caldera",
            "cotizá la reparación de la pérdida",
            "pasale presupuesto por 80 lucas",
        ],
        [
            "make a quote for the AC installation",
            "prepare an estimate for the boiler replacement",
            "send the customer a quote",
            "I need a quote for two split units",
        ],
    ),
    "generate_invoice": (
        "financial",
        [
            "hacé la factura del trabajo de ayer",
            "facturale la visita al cliente",
            "emití una factura por el service",
            "generá la factura A para la empresa",
            "mandale la factura del arreglo",
        ],
        [
            "invoice the customer for the repair",
            "issue an invoice for yesterday's job",
            "create the bill for the installation",
            "send them the invoice",
        ],
    ),
    "payment_status": (
        "financial",
        [
            "¿ya pagó el cliente?",
            "cuánto nos debe Álvarez",
            "qué facturas están impagas",
            "registrá el pago de la factura",
            "fijate si cobramos el trabajo",
        ],
        [
            "has the customer paid?",
            "how much does the client owe us",
            "show unpaid invoices",
            "did we get paid for the repair",
        ],
    ),
    "assign_vehicle": (
        "fleet",
        [
            "asignale la camioneta al técnico",
            "que el técnico use la camioneta 2",
            "dale el vehículo grande para ese trabajo",
            "poné la camioneta chica en la visita de mañana",
        ],
        [
            "assign the van to the technician",
            "give the truck to the tech for that job",
            "which vehicle goes to the job, use van 2",
        ],
    ),
    "technician_sick": (
        "fleet",
        [
            "el técnico está enfermo hoy",
            "Sergio no viene, tiene fiebre",
            "se enfermó uno de los técnicos",
            "el plomero avisó que faltó por enfermedad",
        ],
        [
            "the technician is sick today",
            "our tech called in sick",
            "he is ill and won't come in",
        ],
    ),
    "bulk_reschedule": (
        "fleet",
        [
            "pasá todos los trabajos del día al lunes",
            "reprogramá todas las visitas de la zona sur",
            "mové todos los turnos de mañana",
            "pasá sus trabajos a otro técnico",
        ],
        [
            "move all of today's jobs to tomorrow",
            "reschedule every visit in the south zone",
            "push all his jobs to next week",
        ],
    ),
    "dispatch": (
        "fleet",
        [
            "mandá al técnico más cercano ya",
            "enviá a alguien disponible ahora",
            "despachá una cuadrilla a la obra",
            "que vaya el que esté más cerca",
        ],
        [
            "send the nearest technician now",
            "dispatch a crew to the site",
            "get someone over there right away",
        ],
    ),
    "complaint": (
        "escalation",
        [
            "el técnico dejó todo sucio, quiero quejarme",
            "me cobraron de más, es un reclamo",
            "el arreglo no funcionó y estoy disconforme",
            "llegaron tarde y el aire sigue sin andar",
        ],
        [
            "I want to file a complaint about the service",
            "the repair didn't work and I'm not happy",
            "your technician was rude",
        ],
    ),
    "emergency": (
        "escalation",
        [
            "hay una pérdida de gas",
            "se inunda la casa, es urgente",
            "sale humo del tablero eléctrico",
            "hay olor a gas en el edificio",
        ],
        [
            "there's a gas leak",
            "the basement is flooding",
            "sparks coming from the electrical panel",
        ],
    ),
    "frustration_detected": (
        "escalation",
        [
            "NO PUEDE SER, SIEMPRE LO MISMO!!!",
            "estoy harto de esperar, nadie responde",
            "esto es un desastre, qué bronca",
        ],
        [
            "THIS IS RIDICULOUS!!!",
            "I'm so fed up, nothing works",
            "ugh, this is so annoying",
        ],
    ),
    "escalate": (
        "escalation",
        [
            "quiero hablar con un supervisor",
            "pasame con un humano",
            "necesito hablar con el gerente",
        ],
        [
            "let me talk to a manager",
            "I want a human, not a bot",
            "escalate this to your supervisor",
        ],
    ),
    "maintenance_due": (
        "proactive",
        [
            "qué clientes tienen el mantenimiento vencido",
            "a quién le toca service este mes",
            "listá los equipos que necesitan mantenimiento",
        ],
        [
            "which customers are due for maintenance",
            "list overdue services",
            "who needs a maintenance visit this month",
        ],
    ),
    "follow_up": (
        "proactive",
        [
            "hacé el seguimiento de los trabajos de ayer",
            "llamá a los clientes para ver si quedó bien",
            "preguntales cómo quedó el arreglo",
        ],
        [
            "follow up on yesterday's jobs",
            "check in with the customers we visited",
            "ask the client how the repair is holding up",
        ],
    ),
    "seasonal_reminder": (
        "proactive",
        [
            "armá la campaña de revisión de aires para el verano",
            "mandá el recordatorio de calefacción antes del invierno",
            "avisales a todos que revisen el split antes del calor",
        ],
        [
            "start the summer AC check campaign",
            "send the winter heating reminder",
            "remind everyone to service their heaters before winter",
        ],
    ),
    "greeting": ("general", ["hola", "buen día", "buenas tardes"], ["hello", "good morning"]),
    "farewell": ("general", ["chau, gracias", "eso es todo"], ["bye", "thanks, that's all"]),
    "hours": (
        "general",
        [
            "a qué hora abren",
            "qué horario tienen",
            "atienden los sábados",
        ],
        [
            "what are your opening hours",
            "are you open on Saturday",
            "when do you close",
        ],
    ),
    "pricing_info": (
        "general",
        [
            "cuánto sale una visita",
            "pasame la lista de precios",
            "qué precio tiene una carga de gas",
        ],
        [
            "how much does a service call cost",
            "send me your price list",
            "what do you charge for an installation",
        ],
    ),
    "unknown": (
        "general",
        [
            "quién ganó el partido",
            "contame un chiste",
            "qué tiempo va a hacer",
        ],
        [
            "what's the weather like",
            "tell me a joke",
            "who won the game",
        ],
    ),
}


def examples() -> list[Example]:
    out = []
    for intent, (agent, spanish, english) in _DATA.items():
        out += [Example(text, intent, agent, "es") for text in spanish]
        out += [Example(text, intent, agent, "en") for text in english]
    return out


def specs() -> IntentSpecs:
    """The shipped intents' specs (ordering, prerequisites, question forms): the registry's
    defaults file, the one place they are written."""
    return default_specs()
