"""Word lists for name extraction (folded: lowercase, no accents).

NOT_NAME holds words that are often capitalised at the start of a sentence or in shouting but are
never a person or a company on their own: function words, greetings, office verbs (imperative,
voseo and infinitive), weekdays, months, trades.
"""

from __future__ import annotations

import re

from nlu.normalize import word_set

HONORIFICS = word_set(
    """
    sr sra srta sres senor senora senorita don dona dr dra ing lic arq prof mr mrs ms miss
    mister sir madam
    """
)
CUSTOMER_CUES = word_set(
    """
    cliente clienta clientes para de del a al customer client for of to on casa consorcio
    edificio empresa familia soy nombre llamado llamada called named
    book schedule reschedule move cancel create add register find search look pull show update
    change edit validate check quote invoice bill charge call follow remind contact email text
    phone ask tell notify has did does is was paid owes owe
    """
)
# A name followed by these is a customer ("Ortiz pagó", "Patel wants").
CUSTOMER_AFTER = word_set(
    """
    pago pagaron debe deben owes owe paid pays pide pidio piden quiere quieren wants needs
    necesita necesitan reclama reclamo llamo se mudo moved
    """
)
LIVES_IN = word_set("vive viven vivo queda ubicado ubicada lives located based")
TECHNICIAN_NOUNS = word_set(
    """
    tecnico tecnica tecnicos tec tech technician technicians plomero plomera electricista
    gasista instalador instaladora operario
    """
)
TECHNICIAN_VERBS = word_set(
    """
    manda mandale mandalo mandame envia enviale envialo send sending dispatch despacha
    despachale asigna asignale asignar assign assigning reasigna reasignale vaya
    """
)
JOB_NOUNS = word_set(
    """
    trabajos trabajo visitas turnos jobs job visits visit install installation house account
    appointment appointments one repair service invoice invoices quote bill
    """
)
VEHICLES = word_set(
    """
    camioneta camionetas vehiculo vehiculos movil moviles auto camion van vans truck trucks
    vehicle vehicles kangoo partner hilux ranger berlingo fiorino saveiro amarok sprinter
    transit master trafic ducato strada toro frontier hiace expert jumpy boxer daily s10
    """
)
STREET_WORDS = word_set(
    """
    av avenida calle pasaje pje ruta diagonal boulevard bulevar bv st street rd road ave avenue
    blvd lane ln drive way piso depto dpto
    """
)
# A name followed by these is a technician: off sick, free/busy, driving a vehicle
# ("Pedro está enfermo", "Mike called in sick", "¿Ramón está libre?", "que Pablo se lleve la
# Kangoo").
TECHNICIAN_AFTER = re.compile(
    r"^(?:\S+\s+){0,3}?(?:enferm\w*|fiebre|grip\w*|engripad\w*|covid|angina|quebr\w*|lesion\w*|"
    r"licencia|reposo|no\s+(?:viene|vino|va\s+a\s+venir|puede\s+venir)|falt[oa]\w*|"
    r"(?:se\s+)?siente\s+mal|sick|ill|flu|injured|out|off|libre|disponible|free|available|"
    r"ocupad[oa]|busy|lleva|lleve|maneja|drives|takes|"
    # "Steve won't make it in today", "Sam in the Transit", "Lucas en la Kangoo"
    r"(?:won'?t|can'?t|cannot)\s+(?:make\s+it|come\s+in|be\s+in)|"
    rf"(?:in|en|con)\s+(?:the\s+|la\s+|el\s+)?(?:{'|'.join(sorted(VEHICLES))})"
    r")\b"
)

FUNCTION_WORDS = """
    el la los las lo un una unos unas de del al a y e o u en con sin por para que como cuando
    donde cual quien cuanto cuanta cuantos cuantas este esta esto estos estas ese esa eso esos
    esas aquel mi mis tu tus su sus nuestro nuestra le les me te se nos yo vos usted ustedes
    ellos ellas el ella si no ya muy mas menos tambien ademas despues luego antes ahora aca ahi
    alla hoy manana ayer pasado proximo proxima semana mes ano dia dias hora horas tarde noche
    mediodia temprano the a an and or of in on at to for with without from by about as is are
    was be been it its this that these those my your our their his her him them we you they i me
    us if then also plus not please thanks thank today tomorrow yesterday next week month day
    night morning afternoon evening
    """
COURTESY_WORDS = """
    hola holis buenas buenos buen dia dias tardes noches gracias muchas mil chau chao adios
    saludos che dale bueno listo ok okey perfecto genial barbaro joya porfa favor disculpa
    perdon urgente hi hello hey thanks cheers bye goodbye ok okay great sorry urgent asap yes no
    sure good
    """
_CALENDAR = """
    lunes martes miercoles jueves viernes sabado domingo enero febrero marzo abril mayo junio
    julio agosto septiembre setiembre octubre noviembre diciembre monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august september
    october november december mondays tuesdays wednesdays thursdays fridays saturdays sundays
    jan feb mar apr jun jul aug sep sept oct nov dec ene abr ago dic mon tue tues wed thu thur
    thurs fri sat sun feriado feriados
    """
_OFFICE = """
agenda agendame agendale agendar agenda reserva reservame reservar programa programame anota
anotame anotale crea crear creame registra registrar registrame carga cargar cargame da dar dame
alta baja busca buscar buscame buscale mostra mostrame mostrar trae traeme fijate fija mira
pasa pasame pasalo pasala pasalos mueve mover move reprograma reprogramar cambia cambiar cambiale
cancela cancelar cancelame anula anular borra borrar elimina eliminar suspende suspender
actualiza actualizar modifica modificar corregi corregir valida validar verifica verificar
chequea chequear revisa revisar controla controlar hace hacer haceme hacele arma armar armame
armale genera generar generame emiti emitir emitime factura facturar facturale facturame
presupuesto presupuestos presupuesta presupuestar cotiza cotizar cotizame cobra cobrar cobrale
paga pagar pago pagos pagado pagaron pago deuda debe deben manda mandar mandame mandale envia
enviar enviame enviale asigna asignar asignale despacha despachar necesito necesitamos quiero
queremos podes podrias puede pueden hay tengo tenemos tiene tienen es son esta estan fue
sigue quedo avisa avisale llama llamar llamalo llamala contacta contactar recorda recordar
recordale recordame decime decile contame consulta consultar quiero queria hola hace
cliente clienta clientes tecnico tecnica tecnicos turno turnos visita visitas trabajo trabajos
orden ordenes camioneta camionetas vehiculo vehiculos movil moviles equipo cuadrilla factura
facturas recibo cuit dni telefono celular mail email direccion domicilio precio precios tarifa
tarifas lista horario horarios atencion reclamo queja problema emergencia urgencia supervisor
gerente encargado jefe humano persona mantenimiento service servicio instalacion reparacion
revision limpieza arreglo aire aires acondicionado split caldera calefon termotanque estufa gas
perdida agua luz tablero canilla inodoro cano caneria olor humo fuego incendio inundacion
book schedule reschedule move cancel create add register new find search look show lookup get
update change edit fix validate verify check make generate issue send quote invoice bill charge
pay paid payment owes owe assign dispatch need want can could would will should do does did have
has had let lets call tell remind follow customer client technician tech job jobs visit
appointment booking slot slots van truck vehicle crew status price prices pricing list hours
opening open close closed complaint problem issue emergency supervisor manager human person
maintenance repair installation install service heater boiler water gas leak smell smoke fire
flood flooding what which who when where why how any all some every everything nothing anyone
"""
_THINGS = """
nuevo nueva nuevos nuevas new viejo vieja old mismo misma same otro otra other primero ultimo
first last
ac hvac iva cuit cuil dni ok pdf usd ars
"""
NOT_NAME = (
    word_set(FUNCTION_WORDS + COURTESY_WORDS + _CALENDAR + _OFFICE + _THINGS)
    | VEHICLES
    | STREET_WORDS
)
