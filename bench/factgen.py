"""Synthetic facts for judging a memory store's write decision: many distinct facts, and pairs
where a newer text corrects an older one. Pure and deterministic from a seed; standard library
only.

A write rule decides whether a new text is the next version of a stored memory (the older text is
hidden), a possible update of it (both kept, linked), or a memory of its own. It must hide no
distinct fact and should link every correction. A rule tuned on a small hand-written corpus
generalises badly, so this module makes many shapes of both.

Distinct facts (``distinct_facts``, ``DISTINCT_SHAPES``): each is about its own thing, named by a
made-up syllable name unique across the whole set ("velaro", "Quintos") that stays one term under
FTS5's porter stemmer and is never (nor stems like) a word of the templates and pools; a few
shapes name their thing by a serial instead (ticket 48213, flight LH 4821, a car plate). Every
other slot comes from a small pool, so facts of one shape share their template and most of their
words: the hard case for a rule that compares texts. Each fact comes with a question that names
its thing and that the fact answers. No two facts are about the same thing, so all are true at
once. The shapes are

- the eight first templates: software repositories, services with a database and a port, people
  with a role and a team, pets, deployments, rack hosts, meeting rooms, projects with a lead;
- distinct facts holding change words, from real failures: people who share a first name from a
  pool of five but not their surname and each "moved to <city> and now works on the <language>
  team"; "Pin <library> to <version> in <project> because the license changed upstream" (the
  reason clause holds "changed", "switched", "moved", "renamed", "replaced"); someone who
  "switched" to another shift at a plant; an invoice that "changed status"; a channel that "was
  renamed"; a café that "no longer" opens on a day; a ferry that "these days" leaves from a pier;
  a handbook that "was updated"; "the new <name> printer";
- shared stacks, gateway ports, tickets, flights, product prices, event dates, packing lists,
  API key rotation reminders (a period, never a value), allergies, birthdays, vet visits,
  recipes, book loans, library due dates, car plates, home towns, gym schedules, course
  enrolments, conference talks, deliveries, warehouse bins, recurring meetings, desk extensions,
  school classes, bus routes, build pipelines, feature flags, database shards, on-call weeks,
  sports teams, plant watering, a one-clause dislike and a long three-clause hiking plan; in the
  first and the third person.

Correction pairs (``correction_pairs``, ``CORRECTION_SHAPES``): an older and a newer text about
one named thing, of which only the newer can be true now, each shape made both with a change
marker in the newer text ("now", "new", "moved to", "changed to", "turned N last week",
"actually", "switched to", "these days", "no longer ... but") and without one (only the value
differs: "Zed prefers coffee" after "Zed prefers tea"). The question asks for the value without
the marker. Shapes: a number that ends in other digits ("My new locker code ... ends in"), an age
that went up, an appointment moved to another day and hour, a person who now works in another
field, a city, a drink preferred, a quantity, a price, a deadline, a project's lead, a manager, a
library version, a service port, an invoice status, a team, a car, a phone, a favourite thing, a
weekly meeting's room and time, a router's wifi channel.

``make_corpus`` returns both with disjoint names; ``distinct_facts(n, seed)`` is its first part
and ``correction_pairs(n, seed)`` draws its names as if no distinct facts came first.
"""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

T = TypeVar("T")


class Fact(NamedTuple):
    shape: str
    text: str
    question: str


class Correction(NamedTuple):
    shape: str
    marked: bool  # the newer text carries a change marker
    old: str
    new: str
    question: str


def _words(text: str) -> list[str]:
    return text.split()


def _pool(text: str) -> list[str]:
    return [item.strip() for item in text.replace("\n", " ").split("|")]


# --- names ------------------------------------------------------------------------------------
#
# Made-up names built from syllables ("velaro", "quintos", "brenadil"), one per fact. A name must
# stay one distinct term after the porter stemmer too ("quintos" and "quinto" are one term to
# it), and must not be, or stem to, any word of the templates and pools.

ONSETS = _words("b c d f g h j k l m n p r s t v z br dr fl gr kr pl st tr qu sh")
VOWELS = _words("a e i o u a e i o ai")
CODAS = ["", "", "", "n", "r", "l", "s", "x", "nd", "th"]


def _syllable_name(r: random.Random) -> str:
    parts = [r.choice(ONSETS) + r.choice(VOWELS) for _ in range(r.choice((2, 2, 3)))]
    return "".join(parts) + r.choice(CODAS)


def _stems(words: list[str]) -> list[str]:
    """Each word's terms under FTS5's ``porter unicode61``, joined by spaces."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE w USING fts5(t, tokenize='porter unicode61')")
    db.executemany("INSERT INTO w(rowid, t) VALUES (?, ?)", enumerate(words, 1))
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, 'instance')")
    terms: dict[int, list[str]] = {}
    for term, doc in db.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        terms.setdefault(doc, []).append(term)
    db.close()
    return [" ".join(terms.get(n, [])) for n in range(1, len(words) + 1)]


def unique_names(count: int, r: random.Random, reserved: set[str]) -> list[str]:
    """``count`` distinct names, no two with the same stem, none stemming like a reserved word.
    The names for a smaller count are a prefix of those for a larger one (same ``r`` state)."""
    taken = set(_stems(sorted(reserved)))
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        candidates: list[str] = []
        while len(candidates) < (count - len(names)) * 2 + 16:
            name = _syllable_name(r)
            if name not in seen and name not in reserved and 5 <= len(name) <= 10:
                seen.add(name)
                candidates.append(name)
        for name, stem in zip(candidates, _stems(candidates), strict=True):
            if " " not in stem and stem not in taken and len(names) < count:
                taken.add(stem)
                names.append(name)
    return names


# --- pools ------------------------------------------------------------------------------------

FIRST_NAMES = _words("""Aisha Ben Carla Dmitri Elena Farid Grace Hiro Ines Jonas Kemi Liam Mei
Nadia Omar Priya Rosa Sven Tomas Uma Victor Wen Yusuf Zara""")
FEW_FIRST_NAMES = _words("Anna Marco Sara Tom Lena")  # many people share each of these
TEAMS = _pool("""billing|search|mobile|infrastructure|design|data platform|security|onboarding|
payments|customer support|legal|finance|research|growth""")
LANGUAGES = _words("Python Go Rust TypeScript Java Kotlin Ruby Elixir Scala Swift")
RULES = [
    "run the linter before pushing to main",
    "every pull request needs two approvals",
    "never force-push to the release branch",
    "tag each release with a semantic version",
    "keep the test coverage above 80 percent",
    "update the changelog with every merge",
]
DATABASES = _words("PostgreSQL MySQL Redis MongoDB SQLite Cassandra DynamoDB ClickHouse")
PORTS = [3000, 4000, 5000, 6000, 7000, 8000, 8080, 8443, 9000, 9090]
ROLES = _pool("""backend engineer|product designer|data scientist|engineering manager|site
reliability engineer|technical writer|QA engineer|product manager""")
SPECIES = _words("cat dog parrot rabbit hamster tortoise goldfish ferret")
PET_PLACES = _pool("kitchen|hallway|garden|living room|bedroom")
REGIONS = _words("eu-west-1 us-east-1 us-west-2 ap-south-1 eu-central-1 ap-northeast-1")
VERSIONS = [f"{a}.{b}.{c}" for a in (1, 2, 3) for b in (0, 4) for c in (0, 2)]
PURPOSES = _pool("""nightly backups|CI builds|the staging database|log aggregation|GPU training
jobs|the internal wiki|metrics collection|video transcoding""")
MONTHS = _words("""January February March April May June July August September October November
December""")
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
HOURS = _pool("7:30 am|8 am|9:15 am|10 am|11:45 am|noon|1 pm|2:30 pm|4 pm|6:45 pm")
CITIES = _words("""Lisbon Porto Berlin Osaka Nairobi Montreal Tallinn Hanoi Seoul Bergen Quito
Riga Lyon Cork Kyoto Dakar Hobart Vilnius""")
LIBRARIES = _words("requests numpy pandas Django Flask SQLAlchemy pydantic React lodash express")
LIBRARY_VERSIONS = _words("1.4.2 2.0.1 2.31.0 3.2.0 0.9.8 4.17.21 1.26.4 5.0.0 2.7.3 1.11.0")
PIN_REASONS = _pool("""the license changed upstream|the maintainers switched to a new API|the
package moved to another registry|its main module was renamed in the next major release|the old
parser was replaced|the default timeout changed|upstream dropped support for our runtime|the next
release breaks our integration tests""")
SHIFTS = _words("night early late weekend morning")
INVOICE_STATUSES = _pool("paid|overdue|disputed|cancelled|pending approval|sent")
COMPANY_KINDS = _words("Logistics Supplies Furniture Printing Catering Consulting")
FRAMEWORKS = _words("Django Rails Spring Laravel FastAPI Express Phoenix")
QUEUES = _words("RabbitMQ Kafka SQS NATS Celery")
PROXIES = _words("nginx Envoy HAProxy Traefik Caddy")
AIRLINES = _words("TP LH KL AF BA IB SK AY LX OS")
PRODUCTS = _pool("backpack|kettle|desk lamp|headset|rain jacket|blender|office chair|monitor")
PRICES = [9, 12, 19, 24, 29, 35, 49, 59, 79, 99, 129, 149, 199]
EVENTS = _words("festival fair marathon concert hackathon reunion")
PACKING = _pool("""a tent|a stove|maps|sleeping bags|a first-aid kit|sunscreen|headlamps|rain
jackets|a water filter|a rope""")
ALLERGENS = _pool("""peanuts|shellfish|penicillin|cats|pollen|latex|gluten|bee stings|dust
mites|sesame|lactose|kiwi""")
INGREDIENTS = _words(
    "lentils carrots garlic paprika chickpeas spinach tomatoes onions thyme barley"
)
DISHES = _words("stew soup curry pie bake")
BOOK_TITLES = _pool(
    "The {} Letters|A Winter in {}|{} and the Sea|The Last Days of {}|Letters from {}"
)
CARS = _pool("""Toyota Corolla|Volkswagen Golf|Renault Clio|Ford Focus|Tesla Model 3|Fiat
Panda|Skoda Octavia|Kia Niro""")
COLOURS = _words("red blue grey white black green silver")
COURSES = _pool("""evening pottery|Spanish for beginners|data analysis|first aid|creative
writing|jazz guitar|bookkeeping""")
TALK_TOPICS = _pool("""observability|zero-downtime migrations|property testing|type hints|
caching|incident reviews|accessibility""")
SUBJECTS = _words("maths physics history biology French chemistry geography art")
BUS_ENDS = _pool(
    "the airport|the central station|the university|the harbour|the hospital|the stadium"
)
ENVIRONMENTS = _pool("staging|production|the canary cluster|the test cluster")
CHECKS = _pool("the unit tests pass|a manual approval|the security scan|the smoke tests pass")
SEGMENTS = _words("beta internal enterprise mobile new")
PERCENTS = [5, 10, 25, 50, 75, 100]
MEETING_ROOMS = _words("Atlas Birch Cedar Delta Ember Fjord")
VENUES = _pool("Riverside Park|the old stadium|Northfield Arena|the school ground|Harbour Field")
PLANTS = _words("fern ficus basil monstera cactus orchid")
SPOTS = _pool("the window|the radiator|the bookshelf|the front door|the bathroom mirror")
FOODS = _pool("olives|coriander|mushrooms|blue cheese|liquorice|anchovies|raisins|beetroot")
HIKE_ITEMS = _pool("stove|tent|water filter|first-aid kit|rope")
DOCS_TOPICS = _pool("expenses|parental leave|remote work|travel booking|security training")
PLACES = _pool("lifts|kitchen|reception|print room|stairs")
CHANNELS = _words("announcements help-desk watercooler releases incidents")

# Corrections.
LOCKERS = _pool("""locker code at the {} gym|desk phone extension at the {} office|membership
number at the {} pool|library card at the {} branch""")
APPOINTMENTS = _pool("dentist|physio|haircut|eye test")
JOBS = _pool("nurse|teacher|carpenter|chef|pharmacist|pilot|architect|lawyer")
FIELDS = _words("finance marketing logistics construction healthcare education retail insurance")
DRINKS = _pool("tea|coffee|hot chocolate|sparkling water|orange juice|chai|espresso")
STOCK = _pool("chairs|laptops|projectors|folding tables|first-aid kits|whiteboards")
SERVICES = _pool("gym membership|streaming plan|cleaning service|parking permit")
PHONES = _pool("an iPhone 13|a Pixel 7|a Galaxy S22|a Fairphone 4|a Nokia G21|a Moto G54")
FAVOURITES = {
    "colour": _words("green blue orange purple yellow"),
    "film genre": _words("westerns comedies thrillers documentaries musicals"),
    "board game": _pool("chess|Go|Catan|Scrabble|backgammon"),
    "season": _words("spring summer autumn winter"),
}
ROOM_NUMBERS = [101, 114, 203, 215, 302, 318, 407, 420]
WIFI_CHANNELS = [1, 6, 11, 36, 40, 44, 48, 149]


def _a(phrase: str) -> str:
    return ("an " if phrase[0].lower() in "aeiou" else "a ") + phrase


class _Draw:
    """The random source of one set, and the serials already handed out, kind by kind."""

    def __init__(self, seed: str) -> None:
        self.r = random.Random(seed)
        self._used: dict[str, set[int]] = {}

    def pick(self, pool: Sequence[T]) -> T:
        return self.r.choice(pool)

    def two(self, pool: Sequence[T]) -> tuple[T, T]:
        """Two different values of a pool: an older and a newer one."""
        a, b = self.r.sample(pool, 2)
        return a, b

    def serial(self, kind: str, low: int, high: int) -> int:
        """A number in [low, high] not yet handed out for ``kind``: serials name things too."""
        used = self._used.setdefault(kind, set())
        if len(used) > (high - low) // 2:
            raise ValueError(f"too many {kind} serials for [{low}, {high}]")
        while (n := self.r.randint(low, high)) in used:
            pass
        used.add(n)
        return n

    def person(self, name: str) -> str:
        return f"{self.pick(FIRST_NAMES)} {name.capitalize()}"


# --- distinct facts ---------------------------------------------------------------------------

Shape = Callable[[_Draw, str], tuple[str, str]]  # (draw, name) -> (text, question)
DISTINCT: dict[str, Shape] = {}


def _distinct(name: str) -> Callable[[Shape], Shape]:
    def register(shape: Shape) -> Shape:
        DISTINCT[name] = shape
        return shape

    return register


@_distinct("repo")
def _repo(d: _Draw, name: str) -> tuple[str, str]:
    text = f"The {name} repository is written in {d.pick(LANGUAGES)}; {d.pick(RULES)}."
    return text, d.pick(
        [
            f"What language is the {name} repository written in?",
            f"What is the rule for the {name} repository?",
        ]
    )


@_distinct("service")
def _service(d: _Draw, name: str) -> tuple[str, str]:
    text = f"The {name} service uses {d.pick(DATABASES)} and listens on port {d.pick(PORTS)}."
    return text, d.pick(
        [
            f"Which port does the {name} service listen on?",
            f"What database does the {name} service use?",
        ]
    )


@_distinct("person")
def _person(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    text = f"{who} is {_a(d.pick(ROLES))} on the {d.pick(TEAMS)} team."
    return text, d.pick([f"Which team is {who} on?", f"What is {who}'s role?"])


@_distinct("pet")
def _pet(d: _Draw, name: str) -> tuple[str, str]:
    pet = name.capitalize()
    text = (
        f"{d.pick(FIRST_NAMES)}'s {d.pick(SPECIES)} is called {pet} and sleeps in the"
        f" {d.pick(PET_PLACES)}."
    )
    return text, d.pick([f"What kind of animal is {pet}?", f"Who owns the pet called {pet}?"])


@_distinct("deployment")
def _deployment(d: _Draw, name: str) -> tuple[str, str]:
    text = f"The {name} deployment runs version {d.pick(VERSIONS)} in {d.pick(REGIONS)}."
    return text, d.pick(
        [
            f"Which version is the {name} deployment running?",
            f"Which region is the {name} deployment in?",
        ]
    )


@_distinct("host")
def _host(d: _Draw, name: str) -> tuple[str, str]:
    host = f"{name}-{d.r.randint(1, 12):02d}"
    text = f"The host {host} in rack {d.r.randint(1, 9)} is used for {d.pick(PURPOSES)}."
    return text, d.pick(
        [f"What is the host {host} used for?", f"Which rack is the host {host} in?"]
    )


@_distinct("room")
def _room(d: _Draw, name: str) -> tuple[str, str]:
    room = name.capitalize()
    text = (
        f"Meeting room {room} is on floor {d.r.randint(1, 9)} and seats"
        f" {d.pick((4, 6, 8, 10, 12))} people."
    )
    return text, d.pick(
        [f"Which floor is meeting room {room} on?", f"How many people fit in meeting room {room}?"]
    )


@_distinct("project")
def _project(d: _Draw, name: str) -> tuple[str, str]:
    project = name.capitalize()
    text = f"Project {project} is led by {d.pick(FIRST_NAMES)} and ships in {d.pick(MONTHS)}."
    return text, d.pick([f"Who leads project {project}?", f"When does project {project} ship?"])


@_distinct("mover")
def _mover(d: _Draw, name: str) -> tuple[str, str]:
    # A first name from a pool of five: thousands share one, only the surname tells them apart.
    who = f"{d.pick(FEW_FIRST_NAMES)} {name.capitalize()}"
    text = f"{who} moved to {d.pick(CITIES)} and now works on the {d.pick(LANGUAGES)} team."
    return text, d.pick([f"Where did {who} move to?", f"Which team does {who} work on now?"])


@_distinct("pin")
def _pin(d: _Draw, name: str) -> tuple[str, str]:
    library, project = d.pick(LIBRARIES), name.capitalize()
    text = (
        f"Pin {library} to {d.pick(LIBRARY_VERSIONS)} in {project} because {d.pick(PIN_REASONS)}."
    )
    return text, d.pick(
        [
            f"Which version of {library} is pinned in {project}?",
            f"Why is {library} pinned in {project}?",
        ]
    )


@_distinct("shift")
def _shift(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    text = f"{who} switched to the {d.pick(SHIFTS)} shift at the {d.pick(CITIES)} plant."
    return text, d.pick([f"Which shift does {who} work?", f"Which plant does {who} work at?"])


@_distinct("invoice")
def _invoice(d: _Draw, name: str) -> tuple[str, str]:
    sender = f"{name.capitalize()} {d.pick(COMPANY_KINDS)}"
    text = (
        f"The invoice from {sender} changed status to {d.pick(INVOICE_STATUSES)} on"
        f" {d.pick(WEEKDAYS)}."
    )
    return text, f"What is the status of the invoice from {sender}?"


@_distinct("stack")
def _stack(d: _Draw, name: str) -> tuple[str, str]:
    project = name.capitalize()
    text = (
        f"Project {project} runs on {d.pick(FRAMEWORKS)} with {d.pick(DATABASES)} and"
        f" {d.pick(QUEUES)}."
    )
    return text, f"What stack does project {project} run on?"


@_distinct("gateway")
def _gateway(d: _Draw, name: str) -> tuple[str, str]:
    text = f"The {name} gateway is exposed on port {d.pick(PORTS)} behind {d.pick(PROXIES)}."
    return text, d.pick(
        [
            f"Which port is the {name} gateway exposed on?",
            f"What proxy is the {name} gateway behind?",
        ]
    )


@_distinct("ticket")
def _ticket(d: _Draw, name: str) -> tuple[str, str]:
    # Named by its number alone: two tickets differ in one token.
    number = d.serial("ticket", 10_000, 999_999)
    text = f"Ticket {number} is assigned to {d.pick(FIRST_NAMES)} and due on {d.pick(WEEKDAYS)}."
    return text, d.pick([f"Who is ticket {number} assigned to?", f"When is ticket {number} due?"])


@_distinct("flight")
def _flight(d: _Draw, name: str) -> tuple[str, str]:
    code = d.serial("flight", 0, len(AIRLINES) * 9000 - 1)
    flight = f"{AIRLINES[code % len(AIRLINES)]} {1000 + code // len(AIRLINES)}"
    text = (
        f"Flight {flight} to {d.pick(CITIES)} leaves on {d.pick(MONTHS)} {d.r.randint(1, 28)}"
        f" at {d.pick(HOURS)}."
    )
    return text, d.pick([f"When does flight {flight} leave?", f"Where does flight {flight} go?"])


@_distinct("price")
def _price(d: _Draw, name: str) -> tuple[str, str]:
    product = f"{name.capitalize()} {d.pick(PRODUCTS)}"
    return f"The {product} costs {d.pick(PRICES)} euros.", f"How much does the {product} cost?"


@_distinct("event")
def _event(d: _Draw, name: str) -> tuple[str, str]:
    event = f"{name.capitalize()} {d.pick(EVENTS)}"
    text = f"The {event} takes place on {d.pick(MONTHS)} {d.r.randint(1, 28)}."
    return text, f"When is the {event}?"


@_distinct("packing")
def _packing(d: _Draw, name: str) -> tuple[str, str]:
    a, b, c = d.r.sample(PACKING, 3)
    trip = name.capitalize()
    return (
        f"The packing list for the {trip} trip has {a}, {b} and {c}.",
        f"What is on the packing list for the {trip} trip?",
    )


@_distinct("rotation")
def _rotation(d: _Draw, name: str) -> tuple[str, str]:
    text = (
        f"Rotate the API key of the {name} integration every {d.pick((30, 60, 90))} days; the"
        f" next rotation is in {d.pick(MONTHS)}."
    )
    return text, d.pick(
        [
            f"How often is the API key of the {name} integration rotated?",
            f"When is the next key rotation for the {name} integration?",
        ]
    )


@_distinct("allergy")
def _allergy(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    return f"{who} is allergic to {d.pick(ALLERGENS)}.", f"What is {who} allergic to?"


@_distinct("birthday")
def _birthday(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    text = f"{who}'s birthday is on {d.pick(MONTHS)} {d.r.randint(1, 28)}."
    return text, f"When is {who}'s birthday?"


@_distinct("vet")
def _vet(d: _Draw, name: str) -> tuple[str, str]:
    pet = name.capitalize()
    text = f"My {d.pick(SPECIES)} {pet} sees the vet every {d.pick(MONTHS)} for a check-up."
    return text, f"When does {pet} see the vet?"


@_distinct("recipe")
def _recipe(d: _Draw, name: str) -> tuple[str, str]:
    a, b = d.r.sample(INGREDIENTS, 2)
    dish = f"{name.capitalize()} {d.pick(DISHES)}"
    text = f"The {dish} recipe needs {a}, {b} and {d.pick((20, 30, 45, 60))} minutes in the oven."
    return text, f"What does the {dish} recipe need?"


@_distinct("loan")
def _loan(d: _Draw, name: str) -> tuple[str, str]:
    title = d.pick(BOOK_TITLES).format(name.capitalize())
    text = f"I lent my copy of {title} to {d.pick(FIRST_NAMES)} in {d.pick(MONTHS)}."
    return text, f"Who has my copy of {title}?"


@_distinct("due")
def _due(d: _Draw, name: str) -> tuple[str, str]:
    title = d.pick(BOOK_TITLES).format(name.capitalize())
    text = f"The library book {title} is due back on {d.pick(MONTHS)} {d.r.randint(1, 28)}."
    return text, f"When is {title} due back at the library?"


@_distinct("plate")
def _plate(d: _Draw, name: str) -> tuple[str, str]:
    n = d.serial("plate", 0, 26**4 * 90 - 1)
    letters = "".join(chr(65 + n // 26**k % 26) for k in range(4))
    plate = f"{letters[:2]}-{10 + n // 26**4}-{letters[2:]}"
    who = d.person(name)
    text = f"{who}'s {d.pick(COLOURS)} {d.pick(CARS)} has the plate {plate}."
    return text, d.pick([f"What is the plate of {who}'s car?", f"Which car does {who} have?"])


@_distinct("hometown")
def _hometown(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    count = d.pick(("two", "three", "four"))
    text = f"{who} grew up in {d.pick(CITIES)} and speaks {count} languages."
    return text, f"Where did {who} grow up?"


@_distinct("gym")
def _gym(d: _Draw, name: str) -> tuple[str, str]:
    a, b = d.two(WEEKDAYS)
    gym = name.capitalize()
    text = f"I go to the {gym} gym on {a} and {b} at {d.pick(HOURS)}."
    return text, f"When do I go to the {gym} gym?"


@_distinct("course")
def _course(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    text = f"{who} enrolled in {d.pick(COURSES)} on {d.pick(WEEKDAYS)} evenings."
    return text, f"Which course is {who} enrolled in?"


@_distinct("talk")
def _talk(d: _Draw, name: str) -> tuple[str, str]:
    conference = f"{name.capitalize()} conference"
    topic = d.pick(TALK_TOPICS)
    text = (
        f"{d.pick(FIRST_NAMES)} gives the talk on {topic} at the {conference} on"
        f" {d.pick(WEEKDAYS)}."
    )
    return text, f"Who gives the talk on {topic} at the {conference}?"


@_distinct("delivery")
def _delivery(d: _Draw, name: str) -> tuple[str, str]:
    sender = f"{name.capitalize()} {d.pick(COMPANY_KINDS)}"
    h = d.r.randint(8, 16)
    text = f"The delivery from {sender} arrives on {d.pick(WEEKDAYS)} between {h} and {h + 2}."
    return text, f"When does the delivery from {sender} arrive?"


@_distinct("bin")
def _bin(d: _Draw, name: str) -> tuple[str, str]:
    text = (
        f"The {name} brackets are stored in aisle {d.r.randint(1, 20)}, bin"
        f" {d.r.randint(1, 40)} of the {d.pick(CITIES)} warehouse."
    )
    return text, f"Where are the {name} brackets stored?"


@_distinct("standup")
def _standup(d: _Draw, name: str) -> tuple[str, str]:
    team = name.capitalize()
    text = (
        f"The {team} standup happens every {d.pick(WEEKDAYS)} at {d.pick(HOURS)} in the"
        f" {d.pick(MEETING_ROOMS)} room."
    )
    return text, f"When is the {team} standup?"


@_distinct("extension")
def _extension(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    text = f"{who}'s desk extension is {d.r.randint(1000, 9999)}."
    return text, f"What is {who}'s desk extension?"


@_distinct("class")
def _class(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    text = (
        f"{who} teaches {d.pick(SUBJECTS)} to class {d.r.randint(5, 12)}{d.pick('ABC')} in"
        f" room {d.pick(ROOM_NUMBERS)}."
    )
    return text, f"What does {who} teach?"


@_distinct("bus")
def _bus(d: _Draw, name: str) -> tuple[str, str]:
    square = f"{name.capitalize()} Square"
    text = (
        f"The bus from {square} goes to {d.pick(BUS_ENDS)} every {d.pick((10, 15, 20, 30))}"
        f" minutes."
    )
    return text, f"Where does the bus from {square} go?"


@_distinct("pipeline")
def _pipeline(d: _Draw, name: str) -> tuple[str, str]:
    text = (
        f"The {name} pipeline builds on every push and deploys to {d.pick(ENVIRONMENTS)} once"
        f" {d.pick(CHECKS)}."
    )
    return text, f"Where does the {name} pipeline deploy?"


@_distinct("flag")
def _flag(d: _Draw, name: str) -> tuple[str, str]:
    text = f"The {name} feature flag is on for {d.pick(PERCENTS)}% of {d.pick(SEGMENTS)} users."
    return text, f"Who is the {name} feature flag on for?"


@_distinct("shard")
def _shard(d: _Draw, name: str) -> tuple[str, str]:
    text = (
        f"The {name} tenant lives on shard {d.r.randint(1, 64)} of the {d.pick(DATABASES)} cluster."
    )
    return text, f"Which shard holds the {name} tenant?"


@_distinct("oncall")
def _oncall(d: _Draw, name: str) -> tuple[str, str]:
    who = d.person(name)
    text = (
        f"{who} is on call for the {d.pick(TEAMS)} team the week of {d.pick(MONTHS)}"
        f" {d.r.randint(1, 28)}."
    )
    return text, f"When is {who} on call?"


@_distinct("sports")
def _sports(d: _Draw, name: str) -> tuple[str, str]:
    club = f"{name.capitalize()} Rovers"
    text = f"The {club} play their home games at {d.pick(VENUES)} on {d.pick(WEEKDAYS)}s."
    return text, f"Where do the {club} play their home games?"


@_distinct("watering")
def _watering(d: _Draw, name: str) -> tuple[str, str]:
    plant = f"{d.pick(PLANTS)} {name.capitalize()}"
    text = f"My {plant} needs water every {d.r.randint(2, 14)} days and sits by {d.pick(SPOTS)}."
    return text, f"How often does my {plant} need water?"


@_distinct("renamed")
def _renamed(d: _Draw, name: str) -> tuple[str, str]:
    # The team is the thing: a pool team's channel renamed twice would be one thing, twice.
    text = (
        f"The chat channel of the {name} team was renamed to {d.pick(CHANNELS)} in"
        f" {d.pick(MONTHS)}."
    )
    return text, f"What is the chat channel of the {name} team called?"


@_distinct("closed")
def _closed(d: _Draw, name: str) -> tuple[str, str]:
    cafe = f"{name.capitalize()} café"
    text = f"The {cafe} no longer opens on {d.pick(WEEKDAYS)}s."
    return text, f"Which day is the {cafe} closed?"


@_distinct("ferry")
def _ferry(d: _Draw, name: str) -> tuple[str, str]:
    text = f"These days the {name} ferry leaves from pier {d.r.randint(1, 12)}."
    return text, f"Which pier does the {name} ferry leave from?"


@_distinct("handbook")
def _handbook(d: _Draw, name: str) -> tuple[str, str]:
    text = f"The {name} handbook was updated with a section on {d.pick(DOCS_TOPICS)}."
    return text, f"What was added to the {name} handbook?"


@_distinct("printer")
def _printer(d: _Draw, name: str) -> tuple[str, str]:
    text = f"The new {name} printer is on floor {d.r.randint(1, 9)} next to the {d.pick(PLACES)}."
    return text, f"Where is the {name} printer?"


@_distinct("dislike")
def _dislike(d: _Draw, name: str) -> tuple[str, str]:
    who = name.capitalize()  # a single made-up name: the shortest facts of the set
    return f"{who} hates {d.pick(FOODS)}.", f"What does {who} hate?"


@_distinct("hike")
def _hike(d: _Draw, name: str) -> tuple[str, str]:
    weekend, item = f"{name.capitalize()} hiking weekend", d.pick(HIKE_ITEMS)
    first, second = d.two(FIRST_NAMES)
    text = (
        f"On the {weekend} we sleep in the hut above the lake, start walking at"
        f" {d.pick(HOURS)} on {d.pick(WEEKDAYS)}, and {first} brings the {item} while {second}"
        f" carries the maps."
    )
    return text, f"Who brings the {item} on the {weekend}?"


# --- correction pairs -------------------------------------------------------------------------

# (draw, name) -> (older text, newer text with a marker, newer text without one, question)
Pair = Callable[[_Draw, str], tuple[str, str, str, str]]
CORRECTIONS: dict[str, Pair] = {}


def _correction(name: str) -> Callable[[Pair], Pair]:
    def register(pair: Pair) -> Pair:
        CORRECTIONS[name] = pair
        return pair

    return register


@_correction("number")
def _c_number(d: _Draw, name: str) -> tuple[str, str, str, str]:
    thing = d.pick(LOCKERS).format(name.capitalize())
    a, b = d.two(range(1000, 10_000))
    return (
        f"My {thing} ends in {a}.",
        f"My new {thing} ends in {b}.",
        f"My {thing} ends in {b}.",
        f"What does my {thing} end in?",
    )


@_correction("age")
def _c_age(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, age = d.person(name), d.r.randint(21, 70)
    return (
        d.pick([f"{who} is {age}.", f"{who} is {age} years old."]),
        f"{who} turned {age + 1} last week.",
        f"{who} is {age + 1}.",
        f"How old is {who}?",
    )


@_correction("appointment")
def _c_appointment(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, kind = d.person(name), d.pick(APPOINTMENTS)
    (day1, day2), (hour1, hour2) = d.two(WEEKDAYS[:5]), d.two(HOURS)
    return (
        f"The {kind} appointment for {who} is on {day1} at {hour1}.",
        f"{who}'s {kind} appointment moved to {day2} at {hour2}.",
        f"{who}'s {kind} appointment is on {day2} at {hour2}.",
        f"When is {who}'s {kind} appointment?",
    )


@_correction("job")
def _c_job(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, field = d.person(name), d.pick(FIELDS)
    return (
        f"{who} works as {_a(d.pick(JOBS))}.",
        f"{who} now works in {field}.",
        f"{who} works in {field}.",
        f"What does {who} do for a living?",
    )


@_correction("city")
def _c_city(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, (old, new) = d.person(name), d.two(CITIES)
    return (
        d.pick([f"{who} lives in {old}.", f"{who} now lives in {old}."]),
        f"Actually {who} moved to {new} last month.",
        f"{who} lives in {new}.",
        f"Where does {who} live?",
    )


@_correction("preference")
def _c_preference(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, (old, new) = name.capitalize(), d.two(DRINKS)
    return (
        f"{who} prefers {old}.",
        f"{who} prefers {new} these days.",
        f"{who} prefers {new}.",
        f"What does {who} prefer to drink?",
    )


@_correction("quantity")
def _c_quantity(d: _Draw, name: str) -> tuple[str, str, str, str]:
    things, (old, new) = d.pick(STOCK), d.two(range(2, 60))
    room = f"{name.capitalize()} storeroom"
    return (
        f"There are {old} {things} in the {room}.",
        f"The {room} now has {new} {things}.",
        f"There are {new} {things} in the {room}.",
        f"How many {things} are in the {room}?",
    )


@_correction("price")
def _c_price(d: _Draw, name: str) -> tuple[str, str, str, str]:
    thing, (old, new) = f"{name.capitalize()} {d.pick(SERVICES)}", d.two(PRICES)
    return (
        f"The {thing} costs {old} euros a month.",
        f"The price of the {thing} changed to {new} euros a month.",
        f"The {thing} costs {new} euros a month.",
        f"How much does the {thing} cost?",
    )


@_correction("deadline")
def _c_deadline(d: _Draw, name: str) -> tuple[str, str, str, str]:
    (m1, m2), (d1, d2) = d.two(MONTHS), d.two(range(1, 29))
    return (
        f"The {name} report is due on {m1} {d1}.",
        f"The deadline for the {name} report moved to {m2} {d2}.",
        f"The {name} report is due on {m2} {d2}.",
        f"When is the {name} report due?",
    )


@_correction("lead")
def _c_lead(d: _Draw, name: str) -> tuple[str, str, str, str]:
    project, (old, new) = name.capitalize(), d.two(FIRST_NAMES)
    return (
        f"Project {project} is led by {old}.",
        f"{new} is the new lead of project {project}.",
        f"Project {project} is led by {new}.",
        f"Who leads project {project}?",
    )


@_correction("manager")
def _c_manager(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, (old, new) = d.person(name), d.two(FIRST_NAMES)
    return (
        f"{who}'s manager is {old}.",
        f"{who} reports to {new} now.",
        f"{who}'s manager is {new}.",
        f"Who is {who}'s manager?",
    )


@_correction("version")
def _c_version(d: _Draw, name: str) -> tuple[str, str, str, str]:
    library, (old, new) = d.pick(LIBRARIES), d.two(LIBRARY_VERSIONS)
    return (
        f"The {name} project uses {library} {old}.",
        f"The {name} project switched to {library} {new}.",
        f"The {name} project uses {library} {new}.",
        f"Which {library} version does the {name} project use?",
    )


@_correction("port")
def _c_port(d: _Draw, name: str) -> tuple[str, str, str, str]:
    old, new = d.two(PORTS)
    return (
        f"The {name} service listens on port {old}.",
        f"The {name} service moved to port {new}.",
        f"The {name} service listens on port {new}.",
        f"Which port does the {name} service listen on?",
    )


@_correction("status")
def _c_status(d: _Draw, name: str) -> tuple[str, str, str, str]:
    sender, (old, new) = f"{name.capitalize()} {d.pick(COMPANY_KINDS)}", d.two(INVOICE_STATUSES)
    return (
        f"The invoice from {sender} is {old}.",
        f"The invoice from {sender} changed status to {new}.",
        f"The invoice from {sender} is {new}.",
        f"What is the status of the invoice from {sender}?",
    )


@_correction("team")
def _c_team(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, (old, new) = d.person(name), d.two(TEAMS)
    return (
        f"{who} is on the {old} team.",
        f"{who} switched to the {new} team.",
        f"{who} is on the {new} team.",
        f"Which team is {who} on?",
    )


@_correction("car")
def _c_car(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, (old, new) = d.person(name), d.two(CARS)
    return (
        f"{who} drives a {old}.",
        f"{who} no longer drives a {old} but a {new}.",
        f"{who} drives a {new}.",
        f"What car does {who} drive?",
    )


@_correction("phone")
def _c_phone(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, (old, new) = d.person(name), d.two(PHONES)
    return (
        f"{who} has {old}.",
        f"{who} got a new phone, {new}.",
        f"{who} has {new}.",
        f"What phone does {who} have?",
    )


@_correction("favourite")
def _c_favourite(d: _Draw, name: str) -> tuple[str, str, str, str]:
    who, kind = d.person(name), d.pick(sorted(FAVOURITES))
    old, new = d.two(FAVOURITES[kind])
    return (
        f"{who}'s favourite {kind} is {old}.",
        f"{who}'s favourite {kind} is now {new}.",
        f"{who}'s favourite {kind} is {new}.",
        f"What is {who}'s favourite {kind}?",
    )


@_correction("meeting")
def _c_meeting(d: _Draw, name: str) -> tuple[str, str, str, str]:
    sync, (r1, r2), (t1, t2) = f"{name.capitalize()} weekly sync", d.two(ROOM_NUMBERS), d.two(HOURS)
    return (
        f"The {sync} is in room {r1} at {t1}.",
        f"The {sync} changed to room {r2} at {t2}.",
        f"The {sync} is in room {r2} at {t2}.",
        f"Where and when is the {sync}?",
    )


@_correction("wifi")
def _c_wifi(d: _Draw, name: str) -> tuple[str, str, str, str]:
    router, (old, new) = f"{name.capitalize()} router", d.two(WIFI_CHANNELS)
    return (
        f"The wifi of the {router} is on channel {old}.",
        f"We switched the wifi of the {router} to channel {new}.",
        f"The wifi of the {router} is on channel {new}.",
        f"Which channel is the wifi of the {router} on?",
    )


DISTINCT_SHAPES: tuple[str, ...] = tuple(DISTINCT)
CORRECTION_SHAPES: tuple[str, ...] = tuple(CORRECTIONS)


# --- the sets ---------------------------------------------------------------------------------


def _reserved_words() -> set[str]:
    """Every word the templates and pools can produce, lowercased: no name may be (or stem
    like) one. Each shape is drawn many times so that every pool value shows up."""
    d = _Draw("reserved")
    texts = [*FIRST_NAMES, *FEW_FIRST_NAMES, *BOOK_TITLES, *LOCKERS]
    for _ in range(200):
        texts += [" ".join(shape(d, "x")) for shape in DISTINCT.values()]
        texts += [" ".join(pair(d, "x")) for pair in CORRECTIONS.values()]
    return {w.lower() for w in re.findall(r"\w+", " ".join(texts))}


def _names(count: int, seed: int) -> list[str]:
    return unique_names(count, random.Random(f"names:{seed}"), _reserved_words())


def _facts(names: list[str], seed: int) -> list[Fact]:
    d = _Draw(f"facts:{seed}")
    shapes = list(DISTINCT.items())
    facts = []
    for name in names:
        shape, make = shapes[d.r.randrange(len(shapes))]
        facts.append(Fact(shape, *make(d, name)))
    assert len({f.text for f in facts}) == len(facts), "two facts share a text"
    return facts


def _pairs(names: list[str], seed: int) -> list[Correction]:
    """Shapes in turn, marked and unmarked in turn per shape (so each shape has both once
    there are twice as many pairs as shapes), in shuffled order."""
    d = _Draw(f"corrections:{seed}")
    shapes = list(CORRECTIONS.items())
    pairs = []
    for k, name in enumerate(names):
        shape, make = shapes[k % len(shapes)]
        old, marked_new, plain_new, question = make(d, name)
        marked = (k // len(shapes)) % 2 == 0
        pairs.append(Correction(shape, marked, old, marked_new if marked else plain_new, question))
    d.r.shuffle(pairs)
    assert len({text for p in pairs for text in (p.old, p.new)}) == 2 * len(pairs)
    return pairs


def make_corpus(distinct: int, corrections: int, seed: int) -> tuple[list[Fact], list[Correction]]:
    """``distinct`` facts and ``corrections`` pairs, no name shared between any two of them."""
    names = _names(distinct + corrections, seed)
    return _facts(names[:distinct], seed), _pairs(names[distinct:], seed)


def distinct_facts(count: int, seed: int) -> list[Fact]:
    """``count`` distinct facts: the same as ``make_corpus(count, any, seed)[0]``."""
    return _facts(_names(count, seed), seed)


def correction_pairs(count: int, seed: int) -> list[Correction]:
    """``count`` correction pairs (their names may be those of ``distinct_facts``: use
    ``make_corpus`` for both at once)."""
    return _pairs(_names(count, seed), seed)
