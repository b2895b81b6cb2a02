"""Hand-written changes of facts, labelled: which older memory a new memory makes out of date.

Each persona is one scope: a few facts stored first (``facts``, keyed by a short label), then each
case adds one new memory to a fresh copy of that scope. ``replaces`` names the fact the new memory
makes out of date, or is None when it replaces nothing: a detail added to a fact that stays true
("Lena's manager Paul now approves her leave"), a change of someone else (a relative, a colleague),
a word of change about something else ("moved the dentist appointment"). Positive cases include
changes the rules are not built for ("now wants replies in Spanish"): the benchmark measures what
a user would see, not what the rules were written to catch.

Three forms of writing, as agent memories come: the person's name ("Lena lives in Leeds"), "User"
("User lives in Porto"), and no subject ("Lives in Porto", facts extracted from a conversation), plus
projects and teams. Personas of the ``dev`` split may be used to choose constants; ``holdout`` ones
are measured once with what dev chose. Written on 2026-11-28, before any of them was measured; the
``fresh`` split was written after the rules were changed on dev and holdout, and measured once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    new: str
    replaces: str | None


@dataclass(frozen=True)
class Persona:
    name: str
    split: str
    facts: dict[str, str]
    cases: tuple[Case, ...]


PERSONAS: tuple[Persona, ...] = (
    Persona(
        "lena",
        "dev",
        {
            "job": "Lena is a nurse at St. Mary's Hospital",
            "city": "Lena lives in Leeds",
            "manager": "Lena's manager is Paul Grant",
            "diet": "Lena is vegetarian",
            "cat": "Lena has a cat named Biscuit",
            "lang": "Lena prefers replies in British English",
            "learning": "Lena is learning Spanish",
            "car": "Lena drives a Honda Civic",
            "partner": "Lena's partner is called Tom",
            "plan": "Lena is on the Pro plan",
        },
        (
            Case("Lena moved to Manchester last month", "city"),
            Case("Lena started a new job as a school nurse in Salford", "job"),
            Case("Lena now reports to Karen Hughes", "manager"),
            Case("Lena is no longer vegetarian, she eats fish again", "diet"),
            Case("Lena switched from the Honda Civic to an electric Kia", "car"),
            Case("Lena and Tom broke up; she is now dating Sam", "partner"),
            Case("Lena downgraded to the Free plan", "plan"),
            Case("Lena now wants replies in Spanish so she can practise", "lang"),
            Case("Lena stopped learning Spanish and started Italian", "learning"),
            Case("Lena's manager Paul Grant now approves her leave requests", None),
            Case("Lena's sister moved to Dublin", None),
            Case("Lena moved her dentist appointment to Thursday", None),
            Case("Lena's partner Tom started a new job at the BBC", None),
            Case("Lena now prefers tea over coffee", None),
            Case("Lena changed her phone number last week", None),
            Case("Lena's cat Biscuit now eats only wet food", None),
        ),
    ),
    Persona(
        "helix",
        "dev",
        {
            "backend": "Helix's backend is written in Python with Django",
            "db": "Helix uses PostgreSQL 14 as its main database",
            "deploy": "Helix deploys to AWS ECS",
            "lead": "The Helix team lead is Omar Haddad",
            "ci": "Helix's CI runs on Jenkins",
            "errors": "Helix uses Sentry for error tracking",
            "release": "Helix releases every two weeks on Tuesday",
            "frontend": "Helix's frontend uses React",
            "license": "Helix is licensed under Apache 2.0",
            "po": "Helix's product owner is Grace Liu",
        },
        (
            Case("Helix migrated its CI from Jenkins to GitHub Actions", "ci"),
            Case("Helix upgraded from PostgreSQL 14 to PostgreSQL 16", "db"),
            Case("Helix now deploys to Google Cloud Run instead of ECS", "deploy"),
            Case("Priya Nair took over as Helix team lead from Omar Haddad", "lead"),
            Case("Helix now releases every Monday", "release"),
            Case("Helix replaced Sentry with Datadog for error tracking", "errors"),
            Case("Helix's frontend was rewritten from React to Svelte", "frontend"),
            Case("Helix switched its license from Apache 2.0 to MIT", "license"),
            Case("The product owner of Helix is now Ben Carter", "po"),
            Case("Helix now also stores sessions in Redis", None),
            Case("Helix moved the daily standup to 10am", None),
            Case("Omar Haddad now leads the mobile squad as well", None),
            Case("Helix's Django version is now 5.0", None),
            Case("Grace Liu, the product owner, is now on parental leave until March", None),
            Case("The Helix database migration that adds indexes is now finished", None),
        ),
    ),
    Persona(
        "rafa",
        "dev",
        {
            "city": "Lives in Valencia",
            "job": "Works as a data engineer at Glovo",
            "diet": "Is vegan",
            "gym": "Goes climbing twice a week",
            "phone": "Uses an iPhone 13",
            "manager": "Reports to Elena Ruiz",
            "editor": "Prefers VS Code for Python",
            "kids": "Has a daughter named Lucia",
            "status": "Is single",
        },
        (
            Case("Moved to Madrid in June", "city"),
            Case("Left Glovo and now works at Cabify as a data engineer", "job"),
            Case("Is not vegan anymore, eats eggs and cheese now", "diet"),
            Case("Switched from the iPhone 13 to a Pixel 8", "phone"),
            Case("Now reports to Miguel Ortega", "manager"),
            Case("Switched from VS Code to Neovim", "editor"),
            Case("Got engaged to Marta in October", "status"),
            Case("Stopped climbing after a shoulder injury", "gym"),
            Case("Daughter Lucia started school in September", None),
            Case("Moved the team offsite to Friday", None),
            Case("Now drinks decaf after 2pm", None),
            Case("Sister moved to Lisbon", None),
            Case("Changed the password of the family Netflix account", None),
            Case("Now uses Copilot inside VS Code", None),
        ),
    ),
    Persona(
        "jonas",
        "holdout",
        {
            "city": "User lives in Porto",
            "job": "User works as a product manager at Farfetch",
            "manager": "User's manager is Ines Costa",
            "diet": "User is pescatarian",
            "hobby": "User plays the guitar",
            "laptop": "User uses a ThinkPad X1 for work",
            "plan": "User is on the Team plan",
            "partner": "User is married to Clara",
            "tz": "User is in the Lisbon time zone",
            "tone": "User likes short answers with bullet points",
        },
        (
            Case("User relocated to Berlin for a new role", "city"),
            Case("User now works at Zalando as a senior product manager", "job"),
            Case("User's new manager is Felix Braun", "manager"),
            Case("User no longer eats fish and is fully vegetarian now", "diet"),
            Case("User switched from the ThinkPad X1 to a MacBook Pro", "laptop"),
            Case("User upgraded to the Enterprise plan", "plan"),
            Case("User and Clara divorced last year", "partner"),
            Case("User is now in the Berlin time zone", "tz"),
            Case("User now prefers detailed answers in full paragraphs", "tone"),
            Case("User's brother moved to London", None),
            Case("User's manager Ines Costa is now also head of design", None),
            Case("User moved the weekly sync with Clara to Sunday", None),
            Case("User's partner Clara now works from home", None),
            Case("User's daughter started a new job at a bakery", None),
            Case("User no longer needs reminders about the gym", None),
        ),
    ),
    Persona(
        "quill",
        "holdout",
        {
            "lang": "Quill's API is written in Go",
            "db": "Quill stores documents in MongoDB",
            "hosting": "Quill is hosted on Heroku",
            "owner": "The Quill service owner is Aisha Khan",
            "ci": "Quill uses CircleCI for builds",
            "logs": "Quill ships its logs to Papertrail",
            "queue": "Quill uses RabbitMQ for background jobs",
            "auth": "Quill authenticates users with Auth0",
            "cadence": "Quill deploys to production on Thursdays",
        },
        (
            Case("Quill moved from Heroku to Fly.io", "hosting"),
            Case("Quill migrated from MongoDB to PostgreSQL", "db"),
            Case("Quill switched from CircleCI to Buildkite", "ci"),
            Case("Aisha Khan handed Quill over; the service owner is now Leo Park", "owner"),
            Case("Quill replaced RabbitMQ with SQS for background jobs", "queue"),
            Case("Quill now sends its logs to Grafana Loki instead of Papertrail", "logs"),
            Case("Quill no longer uses Auth0; it authenticates users with Keycloak", "auth"),
            Case("Quill now deploys continuously on every merge", "cadence"),
            Case("Quill's API now also exposes a GraphQL endpoint", None),
            Case("Aisha Khan, the service owner, is now on call this week", None),
            Case("Quill moved the retro to Wednesday afternoons", None),
            Case("Quill's MongoDB cluster now has three replicas", None),
            Case("The Quill team switched its standup from Zoom to Slack huddles", None),
        ),
    ),
    Persona(
        "mei",
        "holdout",
        {
            "city": "Lives in Taipei",
            "job": "Works at TSMC as a process engineer",
            "diet": "Eats no pork",
            "sport": "Plays badminton on weekends",
            "manager": "Manager is Chen Wei",
            "lang": "Prefers answers in Traditional Chinese",
            "car": "Drives a Toyota Yaris",
            "pet": "Has a dog named Mochi",
        },
        (
            Case("Relocated to Hsinchu to be closer to work", "city"),
            Case("Started a new job at MediaTek as a design engineer", "job"),
            Case("Now reports to Lin Yu-ting", "manager"),
            Case("Now prefers answers in English", "lang"),
            Case("Sold the Toyota Yaris and now rides a scooter", "car"),
            Case("Switched from badminton to tennis", "sport"),
            Case("Mochi now sleeps in the bedroom", None),
            Case("Brother moved to Kaohsiung", None),
            Case("Moved the dentist appointment to next Monday", None),
            Case("Now takes the MRT to work", None),
            Case("Manager Chen Wei is now on leave until May", None),
        ),
    ),
    Persona(
        "noor",
        "fresh",
        {
            "city": "Noor lives in Amman",
            "job": "Noor is a pharmacist at Jordan Hospital",
            "manager": "Noor's supervisor is Dr. Sami Odeh",
            "diet": "Noor doesn't eat gluten",
            "car": "Noor drives a Hyundai Elantra",
            "husband": "Noor's husband is Karim",
            "lang": "Noor wants answers in Arabic",
            "sport": "Noor swims every morning",
            "bank": "Noor banks with Arab Bank",
        },
        (
            Case("Noor moved to Dubai in August", "city"),
            Case("Noor left Jordan Hospital and is now a pharmacist at Mediclinic", "job"),
            Case("Noor's new supervisor is Dr. Hana Aziz", "manager"),
            Case("Noor switched from the Hyundai Elantra to a Tesla Model 3", "car"),
            Case("Noor now banks with Emirates NBD instead of Arab Bank", "bank"),
            Case("Noor stopped swimming and now goes running", "sport"),
            Case("Noor's husband Karim moved to Dubai too", None),
            Case("Noor moved her pharmacy shift to the evening", None),
            Case("Noor's supervisor Dr. Sami Odeh is now retiring next year", None),
            Case("Noor's brother left Amman for Toronto", None),
            Case("Noor now also speaks some French", None),
            Case("Noor changed her email signature", None),
        ),
    ),
    Persona(
        "kestrel",
        "fresh",
        {
            "lang": "Kestrel's services are written in Rust",
            "db": "Kestrel keeps its data in Cassandra",
            "cloud": "Kestrel runs on Azure",
            "lead": "The Kestrel tech lead is Hugo Martin",
            "ci": "Kestrel builds on GitLab CI",
            "monitor": "Kestrel is monitored with Prometheus",
            "oncall": "Kestrel's on-call rotation is weekly",
            "docs": "Kestrel's docs live in Confluence",
        },
        (
            Case("Kestrel migrated from Cassandra to ScyllaDB", "db"),
            Case("Kestrel moved from Azure to AWS", "cloud"),
            Case("Zoe Adams took over as Kestrel tech lead from Hugo Martin", "lead"),
            Case("Kestrel's builds now run on GitHub Actions instead of GitLab CI", "ci"),
            Case("Kestrel's docs were moved from Confluence to Notion", "docs"),
            Case("Kestrel's on-call rotation is now every two weeks", "oncall"),
            Case("Kestrel now also exports traces to Jaeger", None),
            Case("Hugo Martin, the tech lead, is now on holiday until Monday", None),
            Case("Kestrel moved the planning meeting to Tuesday", None),
            Case("Kestrel's Rust toolchain was upgraded to 1.90", None),
            Case("The Kestrel team switched its retro board from Miro to FigJam", None),
        ),
    ),
    Persona(
        "ola",
        "fresh",
        {
            "city": "Lives in Oslo",
            "job": "Works as a UX designer at Vipps",
            "diet": "Is vegetarian",
            "manager": "Reports to Ingrid Dahl",
            "phone": "Uses a Samsung Galaxy S22",
            "hobby": "Plays chess online",
            "status": "Is engaged to Erik",
        },
        (
            Case("Relocated to Bergen last spring", "city"),
            Case("Started a new job at Schibsted as a product designer", "job"),
            Case("Is not vegetarian anymore", "diet"),
            Case("Now reports to Lars Berg", "manager"),
            Case("Switched from the Samsung Galaxy S22 to an iPhone 15", "phone"),
            Case("Got married to Erik in June", "status"),
            Case("Gave up playing chess online", "hobby"),
            Case("Brother moved to Oslo", None),
            Case("Moved the book club to Thursdays", None),
            Case("Now drinks oat milk in coffee", None),
            Case("Manager Ingrid Dahl is now on sick leave", None),
        ),
    ),
)
