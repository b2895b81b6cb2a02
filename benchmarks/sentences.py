"""Synthetic but realistic agent-memory sentences, and queries that ask about them (no external data).

    python benchmarks/sentences.py [--n 20] [--seed 0] [--check 100000]

:class:`SentenceGenerator` yields an endless, deterministic (seeded ``random.Random``) stream of
distinct :class:`Fact` s: a memory sentence in the style an agent stores (preferences, facts about
people and projects, dated events, numbers, tools, places, health, purchases, incidents …) and a
query that paraphrases or asks about it from its subject and object ("Why did Ana Silva move away
from Jenkins?" for "Ana Silva switched from Jenkins to GitHub Actions because …"). About two dozen
templates draw from vocabularies of tens to hundreds of words each, so embeddings spread out
instead of forming a handful of near-identical clusters (random Gaussian vectors would make any
ANN index look broken; templated one-liners with ten words make it look too good).

Distinctness is enforced with a set of 64-bit content digests (about 70 MB at 1M sentences).
Numbers stay short and no sentence looks like a secret, a card number, an e-mail or a phone number,
so hygiene guards never refuse or rewrite one. ``--n`` prints samples; ``--check N`` generates N
sentences and prints how varied they are.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip())


FIRST = _words("""
Ana, Ben, Chloe, Dmitri, Elena, Farah, Gustavo, Hannah, Ibrahim, Jonas, Kaito, Leila, Mateo, Nadia, Oliver,
Priya, Quentin, Rosa, Samir, Tamara, Umar, Valentina, Wei, Ximena, Yusuf, Zoe, Aaron, Bianca, Carlos, Daria,
Emeka, Fiona, Goran, Hiroshi, Ines, Jamal, Katarzyna, Lars, Mei, Nikolai, Olga, Pablo, Rania, Sven, Tobias,
Uma, Viktor, Wanjiru, Yara, Zaid, Amara, Bruno, Camille, Diego, Esther, Felix, Gabriela, Hamza, Ingrid, Jin,
Kofi, Lucia, Marcus, Nora, Oscar, Paula, Rafael, Sofia, Thabo, Ulla, Vera, William, Xavier, Yasmin, Zeynep,
Adele, Bilal, Clara, Dario, Eva, Fatima, Gideon, Helga, Ivan, Julia, Kwame, Linnea, Malik, Nina, Omar,
Petra, Reza, Sara, Tomas, Ursula, Vikram, Wiebke, Yann, Zara, Alejandro, Beatriz, Cem, Dana, Erik, Freya,
Giulia, Hugo, Isabel, Jakub, Kira, Luca, Mira, Noah, Orla, Pedro, Rui, Sakura, Teodor, Ugo, Vanessa, Wen,
Yosef, Zainab, Anika, Bastian, Chidi, Dalia, Elif, Finn, Greta, Hassan, Ilse, Joao, Keanu, Lotte, Mohammed,
Naledi, Otto, Pilar, Rohan, Selin, Tariq, Ulrich, Violeta, Willa, Yuki, Zhen, Astrid, Boris, Carmen, Dev
""")
LAST = _words("""
Silva, Okafor, Nakamura, Schmidt, Kowalski, Haddad, Johansson, Moreau, Rossi, Petrov, Nguyen, Garcia, Kim,
Mensah, Fischer, Novak, Dubois, Costa, Yilmaz, Andersen, Patel, Chen, Mwangi, Lindqvist, Romero, Tanaka,
Bauer, Ivanova, Oliveira, Sato, Horvat, Kaur, Popescu, Varga, Wagner, Sousa, Jensen, Ali, Ortiz, Lopez,
Murphy, Walsh, Kelly, Brennan, Duarte, Ferreira, Gomez, Herrera, Iyer, Joshi, Khan, Larsen, Meyer, Nowak,
Olsen, Park, Quinn, Reyes, Santos, Torres, Ueda, Vasquez, Weber, Xu, Yamamoto, Zimmermann, Abbott, Becker,
Castillo, Demir, Eriksson, Fontaine, Gallagher, Hoffmann, Ibrahim, Jovanovic, Keller, Lambert, Mahlangu,
Nielsen, Obi, Pereira, Ramos, Sandoval, Thompson, Urban, Vogel, Wolff, Yadav, Zhou, Akhtar, Bergstrom,
Campbell, Delgado, Eze, Fernandes, Grant, Hughes, Ito, Jaramillo, Kruger, Lehmann, Marino, Nakashima,
Osei, Pham, Richter, Sorensen, Tran, Uddin, Vidal, Weiss, Young, Zhang, Adeyemi, Bianchi, Cruz, Dang,
Esposito, Fuchs, Guerrero, Hansen, Ionescu, Jung, Koch, Lima, Medina, Nunez, Ozturk, Pavlov, Rahman,
Schneider, Takahashi, Umarov, Vargas, Watanabe, Yildiz, Zielinski, Achebe, Brandt, Conti, Dlamini
""")
CITIES = _words("""
Lisbon, Berlin, Nairobi, Osaka, Toronto, Melbourne, Bogota, Krakow, Seoul, Lagos, Dublin, Austin, Oslo,
Marseille, Hanoi, Cape Town, Montreal, Porto, Munich, Istanbul, Mumbai, Bangalore, Singapore, Jakarta,
Manila, Santiago, Lima, Quito, Mexico City, Guadalajara, Denver, Seattle, Portland, Chicago, Boston,
Atlanta, Miami, Vancouver, Calgary, Reykjavik, Helsinki, Stockholm, Copenhagen, Gothenburg, Hamburg,
Cologne, Zurich, Geneva, Vienna, Prague, Budapest, Warsaw, Vilnius, Riga, Tallinn, Athens, Thessaloniki,
Sofia, Bucharest, Belgrade, Zagreb, Ljubljana, Milan, Turin, Bologna, Naples, Valencia, Seville, Bilbao,
Barcelona, Madrid, Lyon, Bordeaux, Nantes, Brussels, Antwerp, Rotterdam, Utrecht, Edinburgh, Glasgow,
Manchester, Bristol, Leeds, Cardiff, Belfast, Cairo, Casablanca, Accra, Kigali, Addis Ababa, Dar es Salaam,
Johannesburg, Durban, Dubai, Doha, Tel Aviv, Amman, Karachi, Lahore, Dhaka, Kathmandu, Colombo, Chennai,
Hyderabad, Pune, Taipei, Kyoto, Sapporo, Busan, Shenzhen, Chengdu, Hong Kong, Kuala Lumpur, Bangkok,
Chiang Mai, Ho Chi Minh City, Perth, Brisbane, Auckland, Wellington, Honolulu, Anchorage, Buenos Aires,
Montevideo, Sao Paulo, Recife, Medellin, Havana, San Juan
""")
NEIGHBORHOODS = _words("""
the old town, the harbour district, the university quarter, the north side, a quiet suburb, the city centre,
the riverside, the hills above the city, a village outside the city, the arts district, the financial
district, the east end, a new development near the airport, the market quarter, the lakeside
""")
ROLES = _words("""
backend engineer, frontend engineer, data scientist, product manager, engineering manager, site reliability
engineer, security analyst, UX designer, technical writer, solutions architect, data engineer, QA lead,
developer advocate, machine learning engineer, mobile developer, database administrator, platform engineer,
release manager, support engineer, sales engineer, CTO, head of design, research scientist, scrum master,
infrastructure lead, compliance officer, finance analyst, recruiter, marketing lead, customer success manager,
staff engineer, principal engineer, intern, contractor, operations manager, legal counsel, accountant,
nurse, teacher, architect, photographer, chef, pharmacist, civil engineer, journalist, translator, pilot
""")
COMPANY_A = _words("""
Blue, North, Bright, Iron, Silver, Green, Red, Clear, Swift, Deep, Open, Quiet, Bold, Cloud, Stone, River,
Summit, Harbor, Pine, Cedar, Lumen, Nova, Vertex, Orbit, Atlas, Polar, Sun, Moon, Coral, Granite, Maple,
Falcon, Copper, Amber, Echo, Pixel, Quantum, Tidal, Prairie, Aurora
""")
COMPANY_B = _words("""
Labs, Systems, Analytics, Logistics, Health, Robotics, Foods, Energy, Media, Bank, Insurance, Software,
Studios, Networks, Dynamics, Works, Partners, Retail, Mobility, Biotech, Capital, Security, Telecom, Farms
""")
PROJECT_A = _words("""
amber, brisk, cobalt, dusty, eager, fuzzy, gentle, hollow, icy, jolly, keen, lucky, misty, noble, olive,
proud, quick, rusty, silent, tidy, urban, vivid, wild, young, zesty, bold, calm, daring, early, frosty,
golden, hidden, indigo, jade, kind, lunar, mellow, nimble, orange, purple, royal, scarlet, steady, sunny
""")
PROJECT_B = _words("""
falcon, otter, lynx, heron, badger, panda, walrus, gecko, koala, bison, cobra, dingo, eagle, ferret, gazelle,
hornet, ibis, jaguar, kestrel, lemur, marten, narwhal, ocelot, puffin, quail, raven, salmon, tapir, urchin,
viper, wombat, yak, zebra, beacon, compass, harbor, lantern, meadow, pebble, quarry, summit, tundra, canyon
""")
TOOLS = _words("""
PostgreSQL, MySQL, SQLite, DuckDB, Redis, Kafka, RabbitMQ, Elasticsearch, ClickHouse, Snowflake, BigQuery,
Airflow, dbt, Spark, Flink, Kubernetes, Docker, Terraform, Ansible, Pulumi, Helm, ArgoCD, Jenkins,
GitHub Actions, GitLab CI, CircleCI, Buildkite, Grafana, Prometheus, Datadog, Sentry, OpenTelemetry, Jaeger,
Kibana, Splunk, PagerDuty, Opsgenie, Jira, Linear, Notion, Confluence, Slack, Microsoft Teams, Zoom, Figma,
Sketch, Storybook, React, Vue, Svelte, Angular, Next.js, Remix, Django, Flask, FastAPI, Rails, Laravel,
Spring Boot, Express, NestJS, Phoenix, Go, Rust, Python, TypeScript, Kotlin, Swift, Scala, Elixir, Haskell,
Java, C#, Ruby, PHP, Zig, Julia, R, pandas, Polars, NumPy, PyTorch, TensorFlow, JAX, scikit-learn, MLflow,
Ray, Dask, Jupyter, VS Code, Neovim, Emacs, IntelliJ, PyCharm, Xcode, Android Studio, Postman, Insomnia,
Bazel, Gradle, Maven, Poetry, uv, pnpm, Yarn, Vite, Webpack, esbuild, Tailwind, Bootstrap, GraphQL, gRPC,
OpenAPI, Stripe, Twilio, Auth0, Keycloak, Vault, Consul, Nomad, Istio, Linkerd, Envoy, NGINX, HAProxy,
Cloudflare, Fastly, Vercel, Netlify, Heroku, Fly.io, AWS Lambda, S3, DynamoDB, Aurora, Cloud Run, BigTable,
Firestore, Supabase, Firebase, MongoDB, Cassandra, ScyllaDB, Neo4j, Memcached, MinIO, Trino, Presto,
Metabase, Superset, Looker, Tableau, Power BI, Excel, Google Sheets, Airtable, Zapier, n8n, Obsidian, Logseq
""")
PURPOSES = _words("""
event streaming, background jobs, the billing pipeline, feature flags, user authentication, search indexing,
nightly reports, log aggregation, metrics dashboards, load testing, schema migrations, image resizing,
the recommendation engine, fraud detection, email delivery, push notifications, A/B experiments,
data warehousing, secret management, service discovery, rate limiting, caching session data,
the mobile release train, end-to-end tests, API documentation, customer support tickets, onboarding docs,
incident response, capacity planning, cost reporting, GDPR exports, the public status page, code review,
sprint planning, design handoff, localisation, the data lake, model training, model serving, batch scoring
""")
METRICS = _words("""
p95 latency, error rate, monthly active users, churn, build time, test coverage, cloud bill, conversion rate,
deploy frequency, mean time to recovery, page load time, signup rate, ticket backlog, CPU usage, memory usage,
queue depth, cache hit rate, storage usage, NPS score, weekly revenue
""")
UNITS = {
    "p95 latency": "ms",
    "error rate": "percent",
    "monthly active users": "thousand",
    "churn": "percent",
    "build time": "minutes",
    "test coverage": "percent",
    "cloud bill": "thousand dollars",
    "conversion rate": "percent",
    "deploy frequency": "deploys a week",
    "mean time to recovery": "minutes",
    "page load time": "ms",
    "signup rate": "signups a day",
    "ticket backlog": "tickets",
    "CPU usage": "percent",
    "memory usage": "GB",
    "queue depth": "messages",
    "cache hit rate": "percent",
    "storage usage": "TB",
    "NPS score": "points",
    "weekly revenue": "thousand euros",
}
PREFERENCE_DOMAINS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("editor theme", _words("dark mode, light mode, high-contrast themes, solarized colours, a sepia theme")),
    ("drink", _words("espresso, green tea, oat milk lattes, black coffee, sparkling water, chai, matcha, cold brew")),
    (
        "meeting slot",
        _words(
            "morning meetings, late-afternoon meetings, meeting-free Wednesdays, short standups, "
            "async updates, Friday demos, walking one-on-ones"
        ),
    ),
    (
        "channel",
        _words(
            "Slack messages, e-mail, phone calls, video calls, written proposals, voice notes, "
            "shared documents, face-to-face chats"
        ),
    ),
    ("language", _words("Python, Go, Rust, TypeScript, Kotlin, Java, Elixir, Ruby, C#, Swift, Scala, Haskell")),
    ("indentation", _words("tabs, four spaces, two spaces")),
    ("seat", _words("window seats, aisle seats, the quiet carriage, exit-row seats")),
    (
        "work mode",
        _words("working from home, working from the office, a hybrid schedule, co-working spaces, working from cafes"),
    ),
    (
        "review style",
        _words(
            "small pull requests, large feature branches, pair programming, written design docs, "
            "trunk-based development, stacked diffs"
        ),
    ),
    (
        "summary format",
        _words("bullet points, short paragraphs, tables, diagrams, one-line summaries, detailed reports, slide decks"),
    ),
    (
        "music",
        _words("lo-fi beats, jazz, classical music, silence, podcasts, ambient playlists, metal, film soundtracks"),
    ),
    ("transport", _words("cycling, the train, driving, the bus, walking, e-scooters, car sharing")),
    ("hotel", _words("small boutique hotels, big chain hotels, apartments, hostels, hotels near the station")),
    ("notes", _words("paper notebooks, Obsidian, Notion, plain text files, Google Docs, sticky notes")),
)
CONTEXTS = _words("""
when coding late at night, for long documents, during the week, on weekends, when travelling, for client
work, in the mornings, after lunch, for planning sessions, when on call, for quick questions, during
crunch time, for anything urgent, for design reviews, when working with the data team, at the office
""")
EVENTS = (
    ("presented", "present"),
    ("attended", "attend"),
    ("organised", "organise"),
    ("hosted", "host"),
    ("led", "lead"),
    ("missed", "miss"),
    ("cancelled", "cancel"),
    ("rescheduled", "reschedule"),
    ("recorded", "record"),
    ("joined", "join"),
)
EVENT_NOUNS = _words("""
the quarterly planning review, a workshop on accessibility, the product launch, the security audit kickoff,
the design sprint, a customer interview, the board meeting, the hiring committee, the team offsite,
a conference talk on observability, the architecture review, a hackathon, the budget review, the retro,
a webinar on pricing, the partner summit, a meetup about Rust, the all-hands, the incident postmortem,
a training on GDPR, the roadmap demo, a panel on remote work, the charity run, a wine tasting, a book club
""")
REASONS = _words("""
the licence got too expensive, builds were too slow, the team wanted better type safety, support ended,
it kept crashing under load, the new hires already knew it, the docs were poor, it integrates with the
rest of the stack, the vendor was acquired, security flagged it, the latency was unacceptable, it was hard
to debug, the community is bigger, it is easier to self-host, the pricing changed, it uses less memory
""")
MILESTONES = _words("""
beta release, public launch, code freeze, security review, load test, migration, design sign-off,
pilot with customers, v2 rollout, data backfill, SOC 2 audit, API deprecation
""")
CAUSES = _words("""
a vendor delay, a scope change, two engineers leaving, a failed load test, a legal review, a holiday freeze,
a critical bug in payments, the reorg, feedback from the pilot customers, a dependency upgrade, budget cuts
""")
ACTIVITIES = (
    ("goes running", "go running"),
    ("swims", "swim"),
    ("plays chess", "play chess"),
    ("does yoga", "do yoga"),
    ("goes climbing", "go climbing"),
    ("plays football", "play football"),
    ("bakes bread", "bake bread"),
    ("calls their parents", "call their parents"),
    ("reviews the sprint board", "review the sprint board"),
    ("writes the weekly update", "write the weekly update"),
    ("goes to the gym", "go to the gym"),
    ("plays the piano", "play the piano"),
    ("meditates", "meditate"),
    ("volunteers at the food bank", "volunteer at the food bank"),
    ("takes a Spanish lesson", "take a Spanish lesson"),
    ("cycles to work", "cycle to work"),
    ("plays tennis", "play tennis"),
    ("goes hiking", "go hiking"),
    ("practises guitar", "practise guitar"),
    ("batch-cooks for the week", "batch-cook"),
)
WEEKDAYS = _words("Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday")
TIMES_OF_DAY = _words("morning, evening, at lunchtime, before work, after dinner, night, afternoon")
MONTHS = _words("January, February, March, April, May, June, July, August, September, October, November, December")
TRIP_REASONS = (*EVENT_NOUNS, "a family wedding", "a holiday", "a customer visit", "a friend's birthday")
ADJECTIVES = _words("""
overkill, perfect, too slow, underrated, overrated, a great fit, painful, surprisingly good, hard to learn,
the obvious choice, too expensive, unreliable, rock solid, fine but verbose, a bad fit, promising
""")
SKILLS = _words("""
Rust, Kubernetes, statistics, Japanese, Spanish, German, public speaking, system design, SQL tuning,
watercolour painting, the cello, sign language, machine learning, negotiation, woodworking, sailing,
Mandarin, Portuguese, product management, Go, distributed systems, photography, pottery, compilers,
accounting, UX research, French, Arabic, data visualisation, chess openings
""")
GOAL_REASONS = _words("""
switch teams, prepare for a promotion, travel more easily, help with the migration, mentor juniors,
start a side business, pass a certification, lead the new platform team, talk to customers in their
language, get better at interviews
""")
DIETS = _words("vegetarian, vegan, pescatarian, gluten-free, lactose intolerant, on a low-carb diet, halal, kosher")
CUISINES = (
    ("Japanese", _words("ramen, sushi, okonomiyaki, udon")),
    ("Italian", _words("risotto, carbonara, pizza, gnocchi")),
    ("Mexican", _words("tacos al pastor, mole, enchiladas, pozole")),
    ("Indian", _words("dosa, biryani, dal, paneer")),
    ("Thai", _words("green curry, pad see ew, som tam, khao soi")),
    ("Ethiopian", _words("injera, shiro, doro wat")),
    ("Lebanese", _words("falafel, tabbouleh, manakish, fattoush")),
    ("Korean", _words("bibimbap, tteokbokki, kimchi")),
    ("Peruvian", _words("ceviche, lomo saltado, causa")),
    ("Greek", _words("moussaka, souvlaki, spanakopita")),
    ("Vietnamese", _words("pho, banh mi, bun cha")),
    ("Turkish", _words("menemen, lahmacun, manti")),
    ("Portuguese", _words("bacalhau, pasteis de nata, caldo verde")),
    ("Nigerian", _words("jollof rice, suya, egusi")),
)
PRODUCTS = _words("""
standing desk, mechanical keyboard, noise-cancelling headset, 4K monitor, ergonomic chair, laptop stand,
e-reader, espresso machine, road bike, tent, drone, tablet, webcam, smartwatch, air purifier, coffee grinder,
pair of running shoes, winter jacket, suitcase, microphone, bookshelf, desk lamp, projector, sofa
""")
STORES = _words("""
a local shop, an online marketplace, the airport duty-free, a second-hand store, the company store, a flea
market, the manufacturer's website, a department store, a discount outlet
""")
SERVICES = _words("""
checkout-api, auth-service, search-gateway, billing-worker, notification-hub, media-proxy, report-builder,
ledger-service, inventory-sync, pricing-engine, user-profile-api, webhook-relay, export-worker,
session-store, recommendation-api, geo-service, chat-backend, invoice-renderer, feature-flag-service,
audit-log-writer
""")
ERRORS = _words("500, 502, 503, 504, timeout, connection-reset, out-of-memory, 429 rate-limit, TLS handshake")
CHANGES = _words("""
config push, database failover, dependency upgrade, DNS change, certificate rotation, schema migration,
autoscaling change, feature flag rollout, kernel patch, network maintenance, cache flush, region failover
""")
CHANNELS = _words("Slack, e-mail, a phone call, Signal, WhatsApp, Microsoft Teams, a calendar invite, text message")
PETS = _words("dog, cat, parrot, rabbit, tortoise, hamster, horse, ferret, goldfish, lizard")
PET_ADJ = _words("old, young, rescued, very shy, energetic, grumpy, three-legged, tiny, huge, fluffy")
RELATIONS = _words(
    "sister, brother, daughter, son, partner, mother, father, cousin, grandmother, best friend, flatmate, neighbour"
)
ALLERGENS = _words(
    "peanuts, shellfish, cats, pollen, penicillin, gluten, eggs, dust mites, bee stings, sesame, latex, soy"
)
BOOK_A = _words(
    "Quiet, Last, Hidden, Broken, Endless, Silent, Invisible, Burning, Forgotten, Distant, Glass, "
    "Paper, Midnight, Northern, Wild"
)
BOOK_B = _words(
    "Garden, Algorithm, River, Empire, Machine, Harbour, Library, Signal, Orchard, Frontier, Atlas, "
    "Engine, Winter, Lighthouse, Kingdom"
)
DECISIONS = _words("""
drop support for the legacy API, move the database to a managed service, freeze new features for a month,
hire two more engineers, rewrite the importer in Go, adopt weekly releases, open-source the SDK, sunset
the desktop app, add an on-call rotation, split the monolith, switch vendors for payments, run a pilot in
Brazil, cut the cloud budget by a fifth, pause the mobile redesign, require design docs for big changes
""")
COMMUTES = _words("bike, train, bus, car, tram, ferry, scooter, foot")
APPOINTMENTS = _words(
    "dentist, eye test, physiotherapy, check-up, dermatology, vaccination, blood test, allergy test, cardiology"
)
INFRA = _words("EKS, GKE, AKS, bare-metal servers, Nomad, ECS Fargate, Cloud Run, a single VM, Hetzner boxes")
REGIONS = _words(
    "eu-west-1, eu-central-1, us-east-1, us-west-2, ap-southeast-1, ap-northeast-1, sa-east-1, af-south-1, ca-central-1"
)
TEAMS = _words(
    "the data team, the platform team, the mobile team, the payments team, the growth team, "
    "the security team, the design team, the support team, the infra team, the research group"
)
SUBJECT_FORMS = (
    "the user",
    "the user's manager {name}",
    "{name}",
    "{name}",
    "{name}",
    "{name} from {team}",
    "the user's colleague {name}",
    "our client {name}",
    "the new hire {name}",
    "{name}",
)


@dataclass(frozen=True)
class Fact:
    """A memory sentence and a query that asks about it."""

    text: str
    query: str


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _name(r: random.Random) -> str:
    return f"{r.choice(FIRST)} {r.choice(LAST)}"


def _subject(r: random.Random) -> tuple[str, str]:
    """(subject as written in the memory, short form for the query)."""
    form = r.choice(SUBJECT_FORMS)
    name = _name(r)
    return form.format(name=name, team=r.choice(TEAMS)), ("the user" if form == "the user" else name)


def _poss(who: str) -> str:
    return f"{who}'s"


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" and not noun.startswith(("UX", "us")) else f"a {noun}"


def _date(r: random.Random) -> str:
    return f"{r.choice(MONTHS)} {r.randint(1, 28)}, {r.randint(2019, 2026)}"


def _company(r: random.Random) -> str:
    return (
        f"{r.choice(COMPANY_A)}{r.choice(COMPANY_B).lower()}"
        if r.random() < 0.3
        else f"{r.choice(COMPANY_A)} {r.choice(COMPANY_B)}"
    )


def _project(r: random.Random) -> str:
    return f"{r.choice(PROJECT_A).capitalize()} {r.choice(PROJECT_B).capitalize()}"


Template = Callable[[random.Random], Fact]


def t_preference(r: random.Random) -> Fact:
    subj, who = _subject(r)
    domain, options = r.choice(PREFERENCE_DOMAINS)
    a, b = r.sample(options, 2)
    text = f"{_cap(subj)} prefers {a} over {b} {r.choice(CONTEXTS)}."
    query = r.choice(
        [f"Does {who} like {a} or {b}?", f"What {domain} does {who} prefer?", f"Is {b} a good choice for {who}?"]
    )
    return Fact(text, query)


def t_job(r: random.Random) -> Fact:
    name, role, company, city = _name(r), r.choice(ROLES), _company(r), r.choice(CITIES)
    since = r.choice(
        [
            "",
            f" since {r.choice(MONTHS)} {r.randint(2012, 2026)}",
            " as of last year",
            f" after {r.randint(2, 15)} years at {_company(r)}",
        ]
    )
    text = f"{name} works as {_a(role)} at {company} in {city}{since}."
    query = r.choice([f"Where does {name} work?", f"What is {name}'s job?", f"Who works at {company} in {city}?"])
    return Fact(text, query)


def t_project_tool(r: random.Random) -> Fact:
    project, tool, purpose = _project(r), r.choice(TOOLS), r.choice(PURPOSES)
    owner = r.choice(["", f", maintained by {_name(r)}", f"; {r.choice(TEAMS)} owns it", " in production"])
    text = f"The {project} project uses {tool} for {purpose}{owner}."
    query = r.choice(
        [
            f"What does {project} use for {purpose}?",
            f"Which tool handles {purpose} in {project}?",
            f"Is {tool} used in the {project} project?",
        ]
    )
    return Fact(text, query)


def t_event(r: random.Random) -> Fact:
    subj, who = _subject(r)
    past, base = r.choice(EVENTS)
    event, city = r.choice(EVENT_NOUNS), r.choice(CITIES)
    text = f"On {_date(r)}, {subj} {past} {event} in {city}."
    query = r.choice([f"When did {who} {base} {event}?", f"Where was {event} that {who} {past}?"])
    return Fact(text, query)


def t_metric(r: random.Random) -> Fact:
    project, metric = _project(r), r.choice(METRICS)
    a, b = r.randint(2, 900), r.randint(2, 900)
    when = r.choice(
        [
            f"in {r.choice(MONTHS)}",
            "after the last release",
            "this quarter",
            "since the migration",
            f"during the {r.choice(MILESTONES)}",
        ]
    )
    text = f"{project}'s {metric} went from {a} to {b} {UNITS[metric]} {when}."
    query = r.choice([f"How did the {metric} of {project} change?", f"What is the {metric} for {project} now?"])
    return Fact(text, query)


def t_switch(r: random.Random) -> Fact:
    subj, who = _subject(r)
    a, b = r.sample(TOOLS, 2)
    text = f"{_cap(subj)} switched from {a} to {b} because {r.choice(REASONS)}."
    query = r.choice([f"Why did {who} move away from {a}?", f"What does {who} use instead of {a}?"])
    return Fact(text, query)


def t_travel(r: random.Random) -> Fact:
    subj, who = _subject(r)
    city = r.choice(CITIES)
    reason = r.choice(TRIP_REASONS)
    text = (
        f"{_cap(subj)} is flying to {city} on {_date(r)} for {reason} and prefers {r.choice(PREFERENCE_DOMAINS[6][1])}."
    )
    query = r.choice([f"When is {who} travelling to {city}?", f"Why is {who} going to {city}?"])
    return Fact(text, query)


def t_family(r: random.Random) -> Fact:
    name, relation, other = _name(r), r.choice(RELATIONS), r.choice(FIRST)
    if r.random() < 0.5:
        allergen = r.choice(ALLERGENS)
        text = f"{_poss(name)} {relation} {other} is allergic to {allergen}."
        query = r.choice(
            [
                f"What is {_poss(name)} {relation} allergic to?",
                f"Who in {_poss(name)} family has an allergy to {allergen}?",
            ]
        )
    else:
        text = f"{_poss(name)} {relation} {other} turns {r.randint(2, 90)} on {r.choice(MONTHS)} {r.randint(1, 28)}."
        query = r.choice(
            [f"When is the birthday of {_poss(name)} {relation}?", f"How old is {other}, {_poss(name)} {relation}?"]
        )
    return Fact(text, query)


def t_deadline(r: random.Random) -> Fact:
    project, milestone = _project(r), r.choice(MILESTONES)
    text = f"The {milestone} for {project} moved to {_date(r)} after {r.choice(CAUSES)}."
    query = r.choice([f"When is the {project} {milestone}?", f"Why was the {milestone} of {project} delayed?"])
    return Fact(text, query)


def t_habit(r: random.Random) -> Fact:
    subj, who = _subject(r)
    act, base = r.choice(ACTIVITIES)
    extra = r.choice(
        ["", f" with {r.choice(FIRST)}", f" in {r.choice(CITIES)}", " and hates missing it", " unless it rains"]
    )
    text = f"{_cap(subj)} {act} every {r.choice(WEEKDAYS)} {r.choice(TIMES_OF_DAY)}{extra}."
    query = r.choice([f"When does {who} usually {base}?", f"What does {who} do on {r.choice(WEEKDAYS)}s?"])
    return Fact(text, query)


def t_opinion(r: random.Random) -> Fact:
    subj, who = _subject(r)
    tool, purpose = r.choice(TOOLS), r.choice(PURPOSES)
    text = f"{_cap(subj)} thinks {tool} is {r.choice(ADJECTIVES)} for {purpose}."
    query = r.choice([f"What does {who} think of {tool}?", f"Should we use {tool} for {purpose}?"])
    return Fact(text, query)


def t_goal(r: random.Random) -> Fact:
    subj, who = _subject(r)
    skill = r.choice(SKILLS)
    text = (
        f"{_cap(subj)} wants to learn {skill} before {r.choice(MONTHS)} {r.randint(2024, 2027)} to "
        f"{r.choice(GOAL_REASONS)}."
    )
    query = r.choice([f"What is {who} trying to learn?", f"Why is {who} studying {skill}?"])
    return Fact(text, query)


def t_food(r: random.Random) -> Fact:
    subj, who = _subject(r)
    cuisine, dishes = r.choice(CUISINES)
    text = f"{_cap(subj)} is {r.choice(DIETS)} and loves {cuisine} food, especially {r.choice(dishes)}."
    query = r.choice(
        [
            f"What kind of food does {who} like?",
            f"Where should I take {who} for dinner?",
            f"Does {who} have dietary restrictions?",
        ]
    )
    return Fact(text, query)


def t_purchase(r: random.Random) -> Fact:
    subj, who = _subject(r)
    product = r.choice(PRODUCTS)
    text = (
        f"{_cap(subj)} bought {_a(product)} for {r.randint(15, 2400)} dollars at {r.choice(STORES)} in "
        f"{r.choice(MONTHS)}."
    )
    query = r.choice([f"How much did {who} pay for the {product}?", f"Where did {who} buy the {product}?"])
    return Fact(text, query)


def t_incident(r: random.Random) -> Fact:
    service, error, change = r.choice(SERVICES), r.choice(ERRORS), r.choice(CHANGES)
    text = (
        f"Incident {r.randint(100, 9999)}: {service} returned {error} errors for {r.randint(3, 240)} minutes "
        f"after the {change} on {_date(r)}."
    )
    query = r.choice([f"What went wrong with {service} after the {change}?", f"Why did {service} fail?"])
    return Fact(text, query)


def t_contact(r: random.Random) -> Fact:
    name, channel = _name(r), r.choice(CHANNELS)
    text = (
        f"{name} asked to be contacted via {channel} and never before {r.randint(7, 11)} am "
        f"or after {r.randint(5, 9)} pm."
    )
    query = r.choice([f"How should I reach {name}?", f"When can I message {name}?"])
    return Fact(text, query)


def t_pet(r: random.Random) -> Fact:
    subj, who = _subject(r)
    pet, pet_name = r.choice(PETS), r.choice(FIRST)
    text = f"{_cap(subj)} has {_a(r.choice(PET_ADJ))} {pet} named {pet_name} who is {r.randint(1, 19)} years old."
    query = r.choice([f"What is the name of {_poss(who)} {pet}?", f"Does {who} have any pets?"])
    return Fact(text, query)


def t_book(r: random.Random) -> Fact:
    subj, who = _subject(r)
    title, other = f"The {r.choice(BOOK_A)} {r.choice(BOOK_B)}", _name(r)
    text = f'{_cap(subj)} is reading "{title}" and recommended it to {other}.'
    query = r.choice([f"Which book did {who} recommend to {other}?", f"What is {who} reading?"])
    return Fact(text, query)


def t_decision(r: random.Random) -> Fact:
    project, decision = _project(r), r.choice(DECISIONS)
    text = f"In the {_date(r)} meeting, the {project} team decided to {decision}."
    query = r.choice([f"What did the {project} team decide?", f"Who decided to {decision}?"])
    return Fact(text, query)


def t_home(r: random.Random) -> Fact:
    subj, who = _subject(r)
    city = r.choice(CITIES)
    text = (
        f"{_cap(subj)} lives in {r.choice(NEIGHBORHOODS)} of {city} and commutes by {r.choice(COMMUTES)} "
        f"in about {r.randint(5, 90)} minutes."
    )
    query = r.choice([f"Where does {who} live?", f"How long is {_poss(who)} commute in {city}?"])
    return Fact(text, query)


def t_health(r: random.Random) -> Fact:
    subj, who = _subject(r)
    appt = r.choice(APPOINTMENTS)
    text = (
        f"{_cap(subj)} has {_a(appt)} appointment with Dr. {r.choice(LAST)} on {_date(r)} at "
        f"{r.randint(8, 17)}:{r.choice(['00', '15', '30', '45'])}."
    )
    query = r.choice([f"When is {_poss(who)} {appt} appointment?", f"Which doctor is {who} seeing?"])
    return Fact(text, query)


def t_deploy(r: random.Random) -> Fact:
    service, infra, region = r.choice(SERVICES), r.choice(INFRA), r.choice(REGIONS)
    text = f"{service} runs on {infra} in {region} with {r.randint(2, 64)} replicas and {r.choice(TOOLS)} in front."
    query = r.choice([f"Where is {service} deployed?", f"How many replicas does {service} have?"])
    return Fact(text, query)


TEMPLATES: tuple[Template, ...] = (
    t_preference,
    t_preference,
    t_job,
    t_project_tool,
    t_event,
    t_metric,
    t_switch,
    t_travel,
    t_family,
    t_deadline,
    t_habit,
    t_opinion,
    t_goal,
    t_food,
    t_purchase,
    t_incident,
    t_contact,
    t_pet,
    t_book,
    t_decision,
    t_home,
    t_health,
    t_deploy,
)


class SentenceGenerator:
    """Endless deterministic stream of distinct :class:`Fact` s (same seed, same stream)."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)
        self._seen: set[int] = set()

    def __iter__(self) -> Iterator[Fact]:
        return self

    def __next__(self) -> Fact:
        r = self._rng
        while True:
            fact = r.choice(TEMPLATES)(r)
            digest = int.from_bytes(hashlib.blake2b(fact.text.encode(), digest_size=8).digest(), "big")
            if digest not in self._seen:
                self._seen.add(digest)
                return fact

    def take(self, n: int) -> list[Fact]:
        return [next(self) for _ in range(n)]

    def texts(self, n: int) -> list[str]:
        return [next(self).text for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20, help="samples to print")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", type=int, default=0, help="generate this many and print variety statistics")
    args = parser.parse_args()
    gen = SentenceGenerator(args.seed)
    for fact in gen.take(args.n):
        print(f"{fact.text}\n    ? {fact.query}")
    if args.check:
        from stratamem.hygiene.pii import find_pii
        from stratamem.hygiene.secrets import find_secrets

        gen = SentenceGenerator(args.seed)
        start = time.perf_counter()
        words: Counter[str] = Counter()
        lengths, flagged, queries = 0, 0, set()
        for i, fact in enumerate(gen):
            if i >= args.check:
                break
            words.update(fact.text.lower().split())
            lengths += len(fact.text)
            queries.add(fact.query)
            if i < 20_000 and (find_secrets(fact.text) or find_pii(fact.text)):
                flagged += 1
        elapsed = time.perf_counter() - start
        print(
            f"{args.check} distinct sentences in {elapsed:.1f} s; mean length {lengths / args.check:.0f} chars; "
            f"{len(words)} distinct words; {len(queries)} distinct queries; "
            f"{flagged} of the first {min(args.check, 20_000)} flagged as secret/PII"
        )


if __name__ == "__main__":
    main()
