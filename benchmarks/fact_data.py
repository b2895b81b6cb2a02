"""Hand-written agent memories and questions for ``fact_ranking.py``.

Each :class:`Scenario` is one scope (a user, a project, a team) with the memories an agent wrote
there, in the order it wrote them (one day apart), and questions a model would ask later. A
question names the memories that answer it; an empty list means the scope holds no answer
(the question should return nothing above the default threshold). A memory may name the older
memory it makes out of date (``supersedes``): the question about it must get the newer one first.

The scenarios are split before any measurement: ``dev`` (used while choosing the ranking's
constants) and ``holdout`` (only reported); a third set, ``fresh``, was written after the constants
had been chosen and is only reported; ``fresh6`` (two users, a film project, a mobile team) was
written on 2026-11-28 by an author who had read only this file, and is only reported. All mix the
same kinds of question:
paraphrases, lexical distractors (a memory sharing a common word with the question but not its
meaning), changed facts, two-fact questions and unanswerable questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class M:
    key: str
    content: str
    supersedes: str | None = None


@dataclass(frozen=True)
class Q:
    text: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    name: str
    split: str
    layer: str
    identifiers: dict[str, str]
    memories: list[M]
    questions: list[Q] = field(default_factory=list)


def q(text: str, *answers: str) -> Q:
    return Q(text, tuple(answers))


SCENARIOS: list[Scenario] = [
    Scenario(
        "dana",
        "dev",
        "user",
        {"user_id": "dana"},
        [
            M("name", "User's name is Dana"),
            M("diet_old", "Dana is a vegetarian"),
            M("city_old", "Dana lives in Hamburg"),
            M("theme", "Dana prefers dark mode in every app"),
            M("daughter", "Dana's daughter Emma starts school in September"),
            M("answers", "Keep answers short, as bullet points"),
            M("job", "Dana works as a product designer at Figma"),
            M("allergy", "Dana is allergic to peanuts"),
            M("lang", "Dana is learning Portuguese on Duolingo"),
            M("trip", "Dana is planning a trip to Lisbon in October"),
            M("coffee", "Dana drinks her coffee black, no sugar"),
            M("gym", "Dana goes to the gym on Monday and Thursday mornings"),
            M("city", "Dana moved to Berlin last month", supersedes="city_old"),
            M("car", "Dana sold her car and now uses a bike to commute"),
            M("phone", "Dana uses an iPhone 15 and a MacBook Air"),
            M("birthday", "Dana's birthday is on 14 March"),
            M("diet", "Dana is not vegetarian anymore, she eats fish now", supersedes="diet_old"),
            M("music", "Dana listens to jazz while working"),
            M("partner", "Dana's partner Lukas is a nurse"),
            M("meeting", "Dana has no meetings on Friday afternoons"),
        ],
        [
            q("which city does the user live in?", "city"),
            q("where is Dana based these days", "city"),
            q("what does Dana eat?", "diet"),
            q("is the user a vegetarian", "diet"),
            q("what theme does Dana like in apps", "theme"),
            q("how should I format my replies to Dana", "answers"),
            q("when does Emma start school", "daughter"),
            q("what is Dana's profession", "job"),
            q("any food allergies I should know about", "allergy"),
            q("which language is Dana studying", "lang"),
            q("where is Dana travelling this autumn", "trip"),
            q("how does she take her coffee", "coffee"),
            q("how does Dana get to work", "car"),
            q("what laptop does Dana use", "phone"),
            q("when is Dana's birthday", "birthday"),
            q("who is Lukas", "partner"),
            q("what kind of music does Dana enjoy", "music"),
            q("when can I schedule a meeting with Dana on Friday", "meeting"),
            q("what devices and what music does Dana use at work", "phone", "music"),
            q(
                "what is Dana's favourite football team",
            ),
            q(
                "does Dana have a dog",
            ),
            q(
                "what is Dana's salary",
            ),
            q(
                "which bank does the user use",
            ),
        ],
    ),
    Scenario(
        "marco",
        "dev",
        "user",
        {"user_id": "marco"},
        [
            M("lang", "Marco writes mostly Python and some Go"),
            M("editor_old", "Marco uses VS Code as his editor"),
            M("tests", "Marco wants tests written with pytest, not unittest"),
            M("style", "Marco formats Python with ruff and a line length of 100"),
            M("os", "Marco develops on Fedora Linux"),
            M("shell", "Marco's shell is zsh with oh-my-zsh"),
            M("tz", "Marco is in the Europe/Rome time zone"),
            M("commits", "Marco prefers conventional commit messages"),
            M("review", "Marco asks for code review comments to be blunt and specific"),
            M("types", "Marco wants type hints on every function"),
            M("editor", "Marco switched from VS Code to Neovim", supersedes="editor_old"),
            M("manager_old", "Marco's manager is Giulia Rossi"),
            M("deadline", "The data pipeline rewrite is due on 30 June"),
            M("docker", "Marco runs services locally with Docker Compose"),
            M("coffee", "Marco takes a walk after lunch every day"),
            M("manager", "Marco now reports to Bob Chen after the reorg", supersedes="manager_old"),
            M("db", "Marco's side project stores data in SQLite"),
            M("kb", "Marco types on a split ergonomic keyboard"),
        ],
        [
            q("which editor does Marco use", "editor"),
            q("who is Marco's manager", "manager"),
            q("which test framework should I use for Marco's code", "tests"),
            q("what line length does Marco format with", "style"),
            q("what operating system does Marco develop on", "os"),
            q("which shell does Marco use", "shell"),
            q("what time zone is Marco in", "tz"),
            q("how should commit messages look", "commits"),
            q("how does Marco like code review feedback", "review"),
            q("should functions have type annotations", "types"),
            q("when is the pipeline rewrite due", "deadline"),
            q("how does Marco run services on his machine", "docker"),
            q("what database does the side project use", "db"),
            q("which programming languages does Marco know", "lang"),
            q("what keyboard does Marco type on", "kb"),
            q("who does Marco report to and when is his deadline", "manager", "deadline"),
            q(
                "what is Marco's favourite restaurant",
            ),
            q(
                "does Marco use Windows at home",
            ),
            q(
                "which cloud provider does Marco deploy to",
            ),
        ],
    ),
    Scenario(
        "atlas",
        "dev",
        "project",
        {"project_id": "atlas"},
        [
            M("db", "The backend of this project runs on PostgreSQL 16"),
            M("indent", "This project uses tabs for indentation"),
            M("ci_old", "CI runs on Jenkins"),
            M("deploy", "Deployments go to Kubernetes on AWS EKS in eu-west-1"),
            M("owner", "The atlas service is owned by the platform team"),
            M("api", "The public API is REST with JSON, versioned under /v2"),
            M("queue", "Background jobs run on Celery with Redis as the broker"),
            M("lang", "The backend is written in Python 3.12 with FastAPI"),
            M("frontend", "The frontend is a React app built with Vite"),
            M("ci", "We moved CI from Jenkins to GitHub Actions", supersedes="ci_old"),
            M("release", "Releases are cut every second Tuesday"),
            M("oncall", "On-call rotation changes every Monday at 10:00"),
            M("auth", "Users sign in with Okta through OpenID Connect"),
            M("logs", "Logs are shipped to Grafana Loki"),
            M("flags", "Feature flags are managed in LaunchDarkly"),
            M("cache_old", "Sessions are cached in Memcached"),
            M("cache", "Session caching moved from Memcached to Redis", supersedes="cache_old"),
            M("tests", "Integration tests need a running PostgreSQL container"),
            M("license", "The code is licensed under Apache 2.0"),
        ],
        [
            q("which database do we use", "db"),
            q("tabs or spaces for indentation?", "indent"),
            q("what CI system does the project use", "ci"),
            q("where is the service deployed", "deploy"),
            q("who owns atlas", "owner"),
            q("how is the API versioned", "api"),
            q("what runs our background jobs", "queue"),
            q("which web framework is the backend built with", "lang"),
            q("what is the frontend built with", "frontend"),
            q("how often do we release", "release"),
            q("when does on-call hand over", "oncall"),
            q("how do users log in", "auth"),
            q("where can I find the logs", "logs"),
            q("where are sessions cached", "cache"),
            q("what do I need to run the integration tests", "tests"),
            q("which license does the code use", "license"),
            q("what database and which cache does the backend use", "db", "cache"),
            q(
                "what is the budget for this project",
            ),
            q(
                "which mobile platforms do we support",
            ),
            q(
                "who designed the company logo",
            ),
        ],
    ),
    Scenario(
        "priya",
        "holdout",
        "user",
        {"user_id": "priya"},
        [
            M("name", "The user's name is Priya Natarajan"),
            M("job_old", "Priya is a data analyst at a bank"),
            M("pet", "Priya has a cat called Miso"),
            M("run", "Priya is training for the Amsterdam half marathon"),
            M("diet", "Priya doesn't eat beef"),
            M("units", "Priya prefers metric units"),
            M("tone", "Please be concise and skip the pleasantries with Priya"),
            M("son", "Priya's son Arjun plays the violin"),
            M("city_old", "Priya lives in Leeds"),
            M("reading", "Priya is reading The Three-Body Problem"),
            M("job", "Priya started a new job as a machine learning engineer at Spotify", supersedes="job_old"),
            M("sleep", "Priya goes to bed around 11 pm"),
            M("car", "Priya drives an electric Kia Niro"),
            M("city", "Priya relocated from Leeds to Stockholm", supersedes="city_old"),
            M("allergy", "Priya is lactose intolerant"),
            M("lang", "Priya speaks English, Tamil and some Swedish"),
            M("anniv", "Priya's wedding anniversary is on 2 August"),
            M("plants", "Priya keeps a small balcony garden with tomatoes and basil"),
        ],
        [
            q("where does Priya live now", "city"),
            q("what does Priya do for a living", "job"),
            q("what is the name of her pet", "pet"),
            q("which race is Priya preparing for", "run"),
            q("is there any meat Priya avoids", "diet"),
            q("should I use miles or kilometres", "units"),
            q("how should I talk to Priya", "tone"),
            q("what instrument does her son play", "son"),
            q("what book is Priya reading at the moment", "reading"),
            q("when does Priya usually sleep", "sleep"),
            q("what car does Priya drive", "car"),
            q("can Priya have milk", "allergy"),
            q("which languages does the user speak", "lang"),
            q("when is her anniversary", "anniv"),
            q("what does Priya grow on her balcony", "plants"),
            q("where does Priya work and where does she live", "job", "city"),
            q(
                "what is Priya's blood type",
            ),
            q(
                "which football club does Priya support",
            ),
            q(
                "how many siblings does the user have",
            ),
        ],
    ),
    Scenario(
        "payments",
        "holdout",
        "team",
        {"team_id": "payments"},
        [
            M("lead_old", "The payments team is led by Sara Okafor"),
            M("standup", "Standup is at 9:30 every weekday"),
            M("provider", "Card payments are processed through Stripe"),
            M("review", "Every pull request needs two approvals before merging"),
            M("slack", "The team channel is #payments-eng on Slack"),
            M("sla", "Refund requests must be handled within 48 hours"),
            M("lang", "Payment services are written in Kotlin"),
            M("lead", "Tom Becker took over as payments team lead from Sara", supersedes="lead_old"),
            M("pci", "Card numbers are never logged; PCI scope is limited to the vault service"),
            M("retro", "Retrospectives happen every other Thursday"),
            M("db", "The ledger lives in a CockroachDB cluster"),
            M("freeze", "There is a deploy freeze during the last week of December"),
            M("alerts_old", "Alerts page the on-call engineer through Opsgenie"),
            M("alerts", "Alerting switched from Opsgenie to PagerDuty", supersedes="alerts_old"),
            M("currency", "Amounts are stored as integer minor units, never floats"),
            M("fraud", "Fraud scoring is done by Sift before capture"),
        ],
        [
            q("who leads the payments team", "lead"),
            q("when is the daily standup", "standup"),
            q("which payment processor do we use for cards", "provider"),
            q("how many approvals does a PR need", "review"),
            q("where does the team chat", "slack"),
            q("how fast must refunds be handled", "sla"),
            q("what language are the payment services in", "lang"),
            q("can we log card numbers", "pci"),
            q("how often are retros", "retro"),
            q("what database holds the ledger", "db"),
            q("when can't we deploy", "freeze"),
            q("which tool pages the on-call engineer", "alerts"),
            q("how should money amounts be stored", "currency"),
            q("how is fraud checked", "fraud"),
            q("who is the lead and which database holds the ledger", "lead", "db"),
            q(
                "what is the team's hiring plan",
            ),
            q(
                "which office does the team sit in",
            ),
        ],
    ),
    Scenario(
        "sam",
        "holdout",
        "user",
        {"user_id": "sam"},
        [
            M("plan_old", "Sam is on the Basic plan"),
            M("company", "Sam works at Northwind Traders as IT admin"),
            M("seats", "Sam's account has 25 seats"),
            M("contact", "Sam prefers to be contacted by email, not phone"),
            M("issue", "Sam reported that SSO logins fail for users with an apostrophe in their name"),
            M("tz", "Sam is based in Chicago"),
            M("billing", "Sam's invoices go to the finance team at Northwind"),
            M("plan", "Sam upgraded from Basic to the Business plan", supersedes="plan_old"),
            M("renewal", "Sam's contract renews on 1 February"),
            M("integr", "Sam uses the Jira and Slack integrations"),
            M("lang", "Sam wants support answers in English"),
            M("mood", "Sam was frustrated by slow response times last quarter"),
            M("admin_old", "The second admin on Sam's account is Kim"),
            M("admin", "Kim left Northwind; Alex Moreno is now the second admin", supersedes="admin_old"),
            M("export", "Sam asked for a CSV export of all audit logs every month"),
        ],
        [
            q("which plan is Sam on", "plan"),
            q("where does Sam work", "company"),
            q("how many licences does the account have", "seats"),
            q("how should we reach Sam", "contact"),
            q("what bug did Sam report", "issue"),
            q("what time zone is Sam in", "tz"),
            q("who receives Sam's invoices", "billing"),
            q("when does the contract renew", "renewal"),
            q("which integrations are enabled", "integr"),
            q("who is the other administrator on the account", "admin"),
            q("what does Sam need every month", "export"),
            q("why was Sam unhappy", "mood"),
            q("what plan is Sam on and when does it renew", "plan", "renewal"),
            q(
                "what is Sam's home address",
            ),
            q(
                "does Sam use the Salesforce integration",
            ),
            q(
                "what is Sam's favourite colour",
            ),
        ],
    ),
    # The "fresh" split: written on 2026-11-27, after every ranking constant had been chosen, and
    # measured once; no tool that chooses a constant reads it (floor_options.py skips it).
    Scenario(
        "kenji",
        "fresh",
        "user",
        {"user_id": "kenji"},
        [
            M("name", "User's name is Kenji"),
            M("city_old", "Kenji lives in Osaka"),
            M("job_old", "Kenji is a backend engineer at Rakuten"),
            M("units", "Kenji wants temperatures in Celsius"),
            M("sister", "Kenji's sister Aiko is getting married in June"),
            M("instr", "Always reply to Kenji in English, even when he writes in Japanese"),
            M("hobby", "Kenji plays the guitar in a weekend band"),
            M("diet", "Kenji doesn't eat pork"),
            M("flight", "Kenji is flying to Toronto on 3 December for a conference"),
            M("job", "Kenji left Rakuten and now works at Mercari as a tech lead", supersedes="job_old"),
            M("city", "Kenji relocated to Tokyo in the spring", supersedes="city_old"),
            M("dentist", "Kenji has a dentist appointment next Tuesday at 4 pm"),
            M("run", "Kenji runs 5 km before work most days"),
            M("laptop", "Kenji's laptop is a ThinkPad X1 running Fedora"),
            M("allergy", "Kenji gets hay fever every spring"),
            M("budget", "Kenji is saving for a flat, with a budget of 60 million yen"),
            M("tea", "Kenji prefers green tea over coffee"),
            M("kids", "Kenji has two kids, Haru and Mio"),
            M("calls", "Kenji doesn't take calls before 10 am"),
        ],
        [
            q("where does Kenji live?", "city"),
            q("which company does the user work for now", "job"),
            q("what is Kenji's role", "job"),
            q("which units should I use for the weather", "units"),
            q("when is Aiko's wedding", "sister"),
            q("what language should responses be in", "instr"),
            q("what instrument does Kenji play", "hobby"),
            q("can I suggest a tonkatsu restaurant to Kenji", "diet"),
            q("when is Kenji's trip to Canada", "flight"),
            q("when is the dentist", "dentist"),
            q("does Kenji exercise", "run"),
            q("what computer does Kenji use", "laptop"),
            q("is Kenji allergic to anything", "allergy"),
            q("how much can Kenji spend on an apartment", "budget"),
            q("what should I offer Kenji to drink", "tea"),
            q("what are the names of Kenji's children", "kids"),
            q("when is a good time to call Kenji", "calls"),
            q("where does Kenji live and where does he work", "city", "job"),
            q("what is Kenji's blood pressure"),
            q("which car does Kenji drive"),
            q("what is Kenji's wife's name"),
            q("which university did Kenji attend"),
            q("what is Kenji's favourite anime"),
        ],
    ),
    Scenario(
        "orion",
        "fresh",
        "project",
        {"project_id": "orion"},
        [
            M("lang", "Orion's API is written in Go"),
            M("db_old", "Orion stores events in MongoDB"),
            M("ci", "CI runs on Buildkite"),
            M("deploy", "Orion deploys to Kubernetes on GKE, region europe-west4"),
            M("owner_old", "The Orion product owner is Lena Fischer"),
            M("release", "Releases go out every second Wednesday"),
            M("auth", "User authentication uses Auth0 with passwordless email links"),
            M("db", "Orion migrated its event store from MongoDB to ClickHouse", supersedes="db_old"),
            M("flags", "Feature flags are managed in LaunchDarkly"),
            M("lint", "Go code must pass golangci-lint with no warnings before merge"),
            M("owner", "Ravi Patel took over as product owner of Orion from Lena", supersedes="owner_old"),
            M("oncall", "The on-call rotation changes every Monday at 10:00"),
            M("adr", "Architecture decisions are recorded as ADRs in docs/adr"),
            M("cache", "Hot queries are cached in Redis for 5 minutes"),
            M("logs", "Logs are shipped to Grafana Loki"),
            M("license", "Orion is proprietary; no open-source release is planned"),
        ],
        [
            q("what language is the backend written in", "lang"),
            q("where are events stored", "db"),
            q("which database holds the event data", "db"),
            q("what CI system do we use", "ci"),
            q("where is Orion hosted", "deploy"),
            q("who is the product owner", "owner"),
            q("how often do we ship a release", "release"),
            q("how do users log in", "auth"),
            q("where are feature toggles configured", "flags"),
            q("what has to pass before I can merge Go code", "lint"),
            q("when does on-call hand over", "oncall"),
            q("where do I write down an architecture decision", "adr"),
            q("how long are query results cached", "cache"),
            q("where can I search the logs", "logs"),
            q("can we publish Orion on GitHub as open source", "license"),
            q("which CI and which log system does Orion use", "ci", "logs"),
            q("what is Orion's monthly cloud bill"),
            q("which Redis version do we run"),
            q("who designed Orion's logo"),
            q("what is the test coverage target"),
        ],
    ),
    Scenario(
        "ingrid",
        "fresh6",
        "user",
        {"user_id": "ingrid"},
        [
            M("name", "User's name is Ingrid"),
            M("job", "Ingrid is an ICU nurse at St Olav's Hospital"),
            M("shift_old", "Ingrid works night shifts, 7 pm to 7 am"),
            M("lang", "Always answer Ingrid in Norwegian (bokmål)"),
            M("husband", "Ingrid's husband Per is a fisherman"),
            M("allergy", "Ingrid is allergic to latex"),
            M("exam", "Ingrid sits her critical care certification exam on 12 May"),
            M("car_old", "Ingrid drives a Volvo V60"),
            M("dog", "Ingrid has a border collie named Tass"),
            M("knit", "Ingrid knits in her spare time, mostly wool sweaters"),
            M("caffeine", "Ingrid avoids caffeine after 2 pm"),
            M("shift", "Ingrid is now on day shifts, 7 am to 3 pm", supersedes="shift_old"),
            M("city", "Ingrid lives in Trondheim"),
            M("mother", "Ingrid's mother lives in a care home in Bergen"),
            M("choir", "Ingrid sings alto in a community choir"),
            M("rehearsal_old", "Ingrid's choir practice is on Wednesday evenings"),
            M("oura", "Ingrid tracks her sleep with an Oura ring"),
            M("car", "Ingrid drives a Tesla Model Y", supersedes="car_old"),
            M("vacation", "Ingrid is taking two weeks off from 1 July to hike in Lofoten"),
            M("rehearsal", "Ingrid's choir practice is on Thursday evenings", supersedes="rehearsal_old"),
        ],
        [
            q("what hours is Ingrid working these days", "shift"),
            q("which hospital employs her", "job"),
            q("what language should my replies be in", "lang"),
            q("what kind of gloves should her dentist not use", "allergy"),
            q("when is her certification test", "exam"),
            q("what vehicle does she own", "car"),
            q("can I offer Ingrid an espresso at 4 pm", "caffeine"),
            q("where is her mum living", "mother"),
            q("which evening is she busy with singing each week", "rehearsal"),
            q("what voice part does she sing", "choir"),
            q("when is Ingrid on holiday and where is she going", "vacation"),
            q("what does Per do for work", "husband"),
            q("what does Ingrid's husband do, and what is the dog called", "husband", "dog"),
            q("how old is Ingrid"),
            q("does Ingrid have children"),
            q("where did she do her nursing degree"),
            q("what's her favourite film"),
        ],
    ),
    Scenario(
        "saltmarsh",
        "fresh6",
        "project",
        {"project_id": "saltmarsh"},
        [
            M("director", "Saltmarsh is a feature documentary directed by Nadia Ferreira"),
            M("budget_old", "The production budget is €180,000"),
            M("funding", "The Dutch Film Fund contributed €60,000"),
            M("camera", "We shoot on a Sony FX6 with Sigma cine primes"),
            M("location", "Principal photography takes place in the Wadden Sea area"),
            M("edit_old", "The film is being edited in Premiere Pro"),
            M("composer", "The score is being composed by Jonas Meyer"),
            M("drone", "Drone shots need a permit from the national park 14 days in advance"),
            M("tides", "Shooting days are planned around low tide"),
            M("budget", "The production budget is €210,000", supersedes="budget_old"),
            M("festival_old", "The target premiere is IDFA in November"),
            M("backup", "Raw footage is backed up to two LaCie drives and to Backblaze B2"),
            M("naming", "Clip files are named date_location_camera, e.g. 20250614_texel_A"),
            M("runtime", "Target runtime is 85 minutes"),
            M("edit", "Editing moved from Premiere Pro to DaVinci Resolve", supersedes="edit_old"),
            M("subtitles", "Subtitles are needed in English, Dutch and German"),
            M("broadcaster", "NTR has pre-bought the Dutch TV rights"),
            M("festival", "We're now aiming to premiere at CPH:DOX in March", supersedes="festival_old"),
            M("insurance", "Equipment insurance is with Hiscox and renews on 30 September"),
            M("narration", "There is no voice-over; the story is told entirely through interviews"),
        ],
        [
            q("how much money does the film have to spend in total", "budget"),
            q("which software is the cut being done in", "edit"),
            q("at which festival will the film be shown first", "festival"),
            q("where are we filming", "location"),
            q("who's writing the music", "composer"),
            q("how far ahead must I ask permission to fly the drone", "drone"),
            q("how do we decide which days to go out filming", "tides"),
            q("where are copies of the raw material kept", "backup"),
            q("how should I name the files from today's shoot", "naming"),
            q("how long should the finished film be", "runtime"),
            q("which languages need captions", "subtitles"),
            q("is there a narrator", "narration"),
            q("which organisations are putting money into the film", "funding", "broadcaster"),
            q("who is recording sound on location"),
            q("what aspect ratio will the film be delivered in"),
            q("when is picture lock"),
            q("which sales agent represents the film"),
        ],
    ),
    Scenario(
        "mobile",
        "fresh6",
        "team",
        {"team_id": "mobile"},
        [
            M("lead", "The mobile team is led by Fatima Haddad"),
            M("sync_old", "The daily sync happens at 9:45"),
            M("platforms", "The iOS app is written in Swift with SwiftUI; Android uses Kotlin and Jetpack Compose"),
            M("release", "App store releases are submitted every other Friday"),
            M("qa_old", "Dmitri handles QA for every mobile release"),
            M("beta", "Beta builds are distributed through TestFlight and Firebase App Distribution"),
            M("crash", "Crash reports are tracked in Sentry"),
            M("design", "Designs live in Figma; the design contact is Oskar"),
            M("branching", "Branches are named feature/<ticket-id>-short-description"),
            M("tickets_old", "Work is tracked in the Jira project MOB"),
            M("minos", "Minimum supported versions are iOS 16 and Android 9"),
            M("sync", "The daily sync happens at 10:15", supersedes="sync_old"),
            M("offsite", "The team offsite is in Porto from 8 to 10 October"),
            M("qa", "Dmitri moved to the web team; Chloe Martin does mobile QA now", supersedes="qa_old"),
            M("demo", "Sprint demos are on Thursday afternoons at 3 pm"),
            M("pr", "Pull requests over 400 lines should be split up"),
            M("oncall", "Weekend on-call for the apps rotates weekly, with handover on Friday at 5 pm"),
            M("tickets", "The team switched from Jira to Linear for tickets", supersedes="tickets_old"),
        ],
        [
            q("what time is the daily meeting", "sync"),
            q("what UI toolkit does the Android app use", "platforms"),
            q("how often do we push a new version to the stores", "release"),
            q("who tests the apps before they ship", "qa"),
            q("what is Dmitri working on now", "qa"),
            q("how do testers get pre-release builds", "beta"),
            q("where do I look when the app crashes in production", "crash"),
            q("who should I ask about the mockups", "design"),
            q("what should I call my git branch", "branching"),
            q("where do we track issues", "tickets"),
            q("when do we show off sprint work", "demo"),
            q("when does the weekend pager change hands", "oncall"),
            q("which tools do we use for beta distribution and crash reporting", "beta", "crash"),
            q("how many engineers does the mobile team have"),
            q("which analytics SDK is in the apps"),
            q("what is the app's current App Store rating"),
            q("which floor does the team sit on"),
        ],
    ),
    Scenario(
        "walter",
        "fresh6",
        "user",
        {"user_id": "walter"},
        [
            M("name", "User's name is Walter"),
            M("retired", "Walter retired in 2019 after 35 years teaching chemistry"),
            M("grandkids", "Walter has three grandchildren; the eldest, Noah, turns 10 on 22 April"),
            M("instr", "Use plain words and avoid jargon when explaining technology to Walter"),
            M("meds", "Walter takes warfarin, so check interactions before suggesting any supplement"),
            M("doctor_old", "Walter's GP is Dr Hughes at Elm Street Surgery"),
            M("garden", "Walter grows dahlias and enters them in the village show every August"),
            M("phone_old", "Walter's phone is a Samsung Galaxy A14"),
            M("pension", "Walter's pension is paid on the 28th of each month"),
            M("bridge", "Walter plays bridge at the community centre on Tuesday afternoons"),
            M("tea_old", "Walter takes two sugars in his tea"),
            M("cruise", "Walter has booked a Norwegian fjords cruise leaving Southampton on 6 June"),
            M("doctor", "Walter's GP is now Dr Adeyemi, since Dr Hughes retired", supersedes="doctor_old"),
            M("hearing", "Walter wears hearing aids and prefers written messages to phone calls"),
            M("phone", "Walter's phone is an iPhone SE", supersedes="phone_old"),
            M("daughter", "Walter's daughter Claire lives nearby in Harrogate and helps with his shopping"),
            M("town", "Walter lives in Knaresborough, North Yorkshire"),
            M(
                "tea",
                "Walter has stopped taking sugar in his tea since being diagnosed with type 2 diabetes",
                supersedes="tea_old",
            ),
        ],
        [
            q("who is his family doctor", "doctor"),
            q("what was Walter's career before he stopped working", "retired"),
            q("when is his oldest grandchild's birthday", "grandkids"),
            q("how should I walk Walter through setting up a new app", "instr"),
            q("is it safe to recommend fish oil or ginkgo to Walter", "meds"),
            q("what kind of mobile does Walter have", "phone"),
            q("when does his retirement income arrive", "pension"),
            q("where is Walter going on holiday in June", "cruise"),
            q("should I ring Walter or text him", "hearing"),
            q("who helps Walter with groceries", "daughter"),
            q("which town is home for Walter", "town"),
            q("how does Walter like his tea", "tea"),
            q("what should I know about Walter's medication and who his GP is", "meds", "doctor"),
            q("does Walter drive"),
            q("what's Walter's email address"),
            q("does Walter have any pets"),
            q("what's his favourite TV programme"),
        ],
    ),
]


#: Questions in the user's own voice, as an agent forwards the user's message ("where do I live
#: now?"), for the scenarios about one user. ``fact_ranking.py`` asks them of the scenario's memories
#: as written (about the name) and of the same memories about "User" (:func:`about_user`), the form
#: of the write gate without a name and of most agents. Dana's were written first and looked at while
#: ``retrieval/voice.py`` was built; Marco's, Priya's and Sam's were written afterwards, before they
#: were measured.
VOICED: dict[str, list[Q]] = {
    "dana": [
        q("where do I live now?", "city"),
        q("what do I eat these days?", "diet"),
        q("what theme do I like in apps?", "theme"),
        q("what's my job?", "job"),
        q("am I allergic to anything?", "allergy"),
        q("which language am I learning?", "lang"),
        q("where am I travelling in October?", "trip"),
        q("how do I take my coffee?", "coffee"),
        q("how do I get to work?", "car"),
        q("when is my birthday?", "birthday"),
        q("who is my partner?", "partner"),
        q("what music do I like?", "music"),
        q("which phone do I have?", "phone"),
        q("when do I go to the gym?", "gym"),
        q("when does my daughter start school?", "daughter"),
        q("what is my salary?"),
        q("do I have a dog?"),
        q("what's my favourite football team?"),
    ],
    "marco": [
        q("which editor do I use now?", "editor"),
        q("who is my manager?", "manager"),
        q("what test framework do I want?", "tests"),
        q("what line length do I use?", "style"),
        q("which OS am I on?", "os"),
        q("what's my shell?", "shell"),
        q("what time zone am I in?", "tz"),
        q("how do I like review comments?", "review"),
        q("when is my pipeline rewrite due?", "deadline"),
        q("what keyboard do I type on?", "kb"),
        q("what does my side project store its data in?", "db"),
        q("what's my favourite restaurant?"),
        q("which cloud do I deploy to?"),
    ],
    "priya": [
        q("where do I live now?", "city"),
        q("what's my job?", "job"),
        q("what's my cat called?", "pet"),
        q("which race am I training for?", "run"),
        q("what meat don't I eat?", "diet"),
        q("what units do I prefer?", "units"),
        q("what does my son play?", "son"),
        q("what am I reading?", "reading"),
        q("when do I go to bed?", "sleep"),
        q("what car do I drive?", "car"),
        q("can I have milk?", "allergy"),
        q("which languages do I speak?", "lang"),
        q("when is my anniversary?", "anniv"),
        q("what do I grow on my balcony?", "plants"),
        q("what's my blood type?"),
        q("how many siblings do I have?"),
        q("which football club do I support?"),
    ],
    "kenji": [  # written with the "fresh" scenarios, before they were measured
        q("where do I live?", "city"),
        q("where do I work now?", "job"),
        q("when is my sister's wedding?", "sister"),
        q("what do I play in my band?", "hobby"),
        q("what don't I eat?", "diet"),
        q("when am I flying to Toronto?", "flight"),
        q("when's my dentist appointment?", "dentist"),
        q("what are my kids called?", "kids"),
        q("what do I like to drink?", "tea"),
        q("when can people call me?", "calls"),
        q("what car do I drive?"),
        q("what's my wife's name?"),
        q("which university did I go to?"),
    ],
    "sam": [
        q("which plan am I on?", "plan"),
        q("where do I work?", "company"),
        q("how many seats does my account have?", "seats"),
        q("how do I prefer to be contacted?", "contact"),
        q("what bug did I report?", "issue"),
        q("where am I based?", "tz"),
        q("who gets my invoices?", "billing"),
        q("when does my contract renew?", "renewal"),
        q("which integrations do I use?", "integr"),
        q("who is the other admin on my account?", "admin"),
        q("what do I need every month?", "export"),
        q("what's my home address?"),
        q("do I use the Salesforce integration?"),
    ],
}


def about_user(scenario: Scenario) -> Scenario:
    """The scenario with its memories about "User" instead of the user's name (the statement of
    the name itself kept), as a separate tenant's scope, asking its ``VOICED`` questions."""
    name = scenario.identifiers["user_id"].capitalize()
    memories = [
        m if m.key == "name" else M(m.key, m.content.replace(f"{name}'s", "User's").replace(name, "User"), m.supersedes)
        for m in scenario.memories
    ]
    return Scenario(
        f"{scenario.name}-user", scenario.split, scenario.layer, scenario.identifiers, memories, VOICED[scenario.name]
    )


def opaque_id(scenario: Scenario) -> Scenario:
    """The scenario as written, under a user id that is not a name ("u-1001"), as a separate tenant's
    scope, asking its ``VOICED`` questions: the name is known only where a memory states it (Dana's
    "User's name is Dana")."""
    number = 1001 + list(VOICED).index(scenario.name)
    return Scenario(
        f"{scenario.name}-opaque",
        scenario.split,
        scenario.layer,
        {"user_id": f"u-{number}"},
        scenario.memories,
        VOICED[scenario.name],
    )


def voiced(scenario: Scenario) -> Scenario:
    """The scenario as written, as a separate tenant's scope, asking its ``VOICED`` questions."""
    return Scenario(
        f"{scenario.name}-name",
        scenario.split,
        scenario.layer,
        scenario.identifiers,
        scenario.memories,
        VOICED[scenario.name],
    )


def without_subject(scenario: Scenario) -> Scenario | None:
    """The scenario with its memories written without their subject, as facts extracted from a
    conversation often are ("Lives in Osaka", "Laptop is a ThinkPad"; the statement of the name
    itself kept), as a separate tenant's scope, asking the scenario's own questions; None for a
    scenario whose ``user_id`` is not a name."""
    name = scenario.identifiers.get("user_id", "").capitalize()
    if not name:
        return None
    subject = re.compile(rf"^{re.escape(name)}(?:'s|\u2019s)?\s+")
    memories = []
    for m in scenario.memories:
        rest = subject.sub("", m.content) if m.key != "name" else m.content
        memories.append(M(m.key, rest[0].upper() + rest[1:], m.supersedes))
    return Scenario(
        f"{scenario.name}-bare", scenario.split, scenario.layer, scenario.identifiers, memories, scenario.questions
    )
