"""The table that runs ``frames``' rules over a memory's clauses: each rule is the literal
words one of which its clause must hold, its pattern and its reader (``frame_rules`` and
``frame_verbs``). One scan of a clause finds the rules its words can trigger; only their
patterns run, and the catch-all copula ("X is Y") only when none of them read anything."""

from __future__ import annotations

import re

from fivefold.extract import attributes as lex
from fivefold.extract import frame_copula as fc
from fivefold.extract import frame_habits as fh
from fivefold.extract import frame_rules as fr
from fivefold.extract import frame_verbs as fv
from fivefold.extract.frame_rules import Found, Rule
from fivefold.extract.phrases import Context, clauses, phrase
from fivefold.text import dictionary_words

_I = re.IGNORECASE

_TEAM = r"(?:team|ward|unit|icu|squad|department|crew|pod|tribe|lab|group|division)"
_CHANGE = (
    r"(?:changed|change|moved|move|switched|switch|pushed|push|rescheduled|reschedule|rebooked|"
    r"rebook|bumped|raised|raise|cut|lowered|lower|reduced|reduce|increased|increase|upgraded|"
    r"upgrade|downgraded|extended|extend|brought forward|updated|update|reissued|renewed|"
    r"transferred|shifted|delayed|postponed|put back|reset|relocated)"
)
_MOVED = (
    r"(?:moved|changed|slipped|pushed|rescheduled|bumped|shifted|delayed|postponed|"
    r"brought forward|moved up|extended|raised|went up|went down|increased|dropped|fell|rose|"
    r"upgraded|switched|relocated|reissued|emigrated|moving|relocating|cut|lowered|reduced|"
    r"rebooked)"
)
_OS = re.compile(r"\b(?:macos|ios|android|windows|ubuntu)\b")
_ADDITIVE_TRIGGERS = {
    "likes": "love|like|enjoy|adore",
    "learning": "learning|studying|taking",
    "subscriptions": "subscribed",
    "allergies": "allergic",
    "reading": "reading|watching|rewatching|re-watching",
    "leads": "lead|chair",
    "speaks": "speak",
    "supports": "support",
    "wears": "wear",
    "eats": "eat",
    "drinks": "drink",
    "does": "do|play",
    "pets": "have|has|adopted|got",
}
_ADDITIVE_VERBS = {
    "likes": r"(?P<neg>don't |do not |no longer |never )?(?:love|loves|like|likes|enjoy|enjoys"
    r"|adore|adores)",
    "learning": r"(?:learning|studying|taking)(?!\s+to\b)",
    "subscriptions": r"subscribed\s+to",
    "allergies": r"allergic\s+to",
    "reading": r"(?:reading|watching|rewatching|re-watching)(?=\s+[A-Z])",
    "leads": r"(?:lead|leads|chair|chairs)(?=\s+the\b)",
    "speaks": r"speaks?",
    "supports": r"supports?(?=\s+[A-Z])",
    "wears": r"(?P<neg>no longer |don't )?wears?",
    "eats": r"(?P<neg>no longer |don't |do not |never |stopped )?(?:eat|eats|eating)",
    "drinks": r"(?P<neg>no longer |don't |do not |never |stopped )(?:drink|drinks|drinking)",
    "does": r"(?P<neg>no longer |don't |stopped )?(?:do|does|play|plays)(?=\s+(?!the\b|my\b|our\b"
    r"|a\b|an\b|\d)[a-z])",
    "pets": r"(?:have|has|adopted|got)(?=\s+(?:a|an|two|three)\s+(?:[\w-]+\s+)?(?:cat|dog|"
    r"rabbit|goldfish|parrot|hamster|kitten|puppy|fish|bird|tortoise)s?\b)",
}


_S = r"^(?P<s>.*?)\b"  # a clause's subject: whatever comes before the verb
# Each rule: what its clause must hold (lower case, "|" between the alternatives), its pattern
# and its reader.
_TABLE: list[tuple[str, str, Rule]] = [
    ("@",
     r"^(?:from now on,?\s+)?(?:please\s+)?(?:use|email me at|reach me at|write to|contact "
     r"me at)\s+(?P<v>\S+@\S+)(?P<rest>.*)$", fv._email),
    ("reissued|issued|gave me|assigned|replaced", _S +
     r"(?:reissued|re-issued|replaced|issued|gave me|assigned)\s+(?P<o>it|them|my\s+"
     r"[\w ]+?|me\s+a\s+new\s+[\w ]+?|a new\s+[\w ]+?)\s+(?:as|with|:|number)?\s*"
     r"(?P<v>[A-Z0-9#][\w-]*.*)$", fv._reissued),
    ("instead of", _S +
     r"(?:goes|go|going|drink|drinks|use|uses|wear|wears|take|takes|do|does|see|sees|"
     r"have|has)\s+(?P<v>.+?)\s+instead\s+of\s+(?:the\s+|a\s+|an\s+|my\s+|our\s+|her\s+|"
     r"his\s+)?(?P<n>[\w -]+?)(?:\s+now)?$", fv._instead_of),
    ("liv|resid|based", _S +
     r"(?:live|lives|living|reside|resides|is based|are based|'s based|'re based|'m based|"
     r"am based)\s+"
     r"(?:now\s+|together\s+|mostly\s+)?(?P<v>(?:in|at|on|with|near)\b.+)$", fr._lives),
    ("run|hosted|deployed|sits", _S +
     r"(?:runs|run|is hosted|are hosted|is deployed|are deployed|sits)\s+(?:now\s+)?"
     r"(?P<v>in\s+.+)$", fv._runs_in),
    ("got the keys",
     r"\bgot the keys (?:to|for) (?P<v>(?:our|my|the|a)\s+(?:new\s+)?(?:house|flat|home|"
     r"place|apartment|bungalow)\b.*)$", fr._keys_to),
    ("rent|bought|share", _S +
     r"(?:rent|rents|bought|share|shares)\s+(?P<v>(?:a|an|the)\s+(?:[\w-]+\s+){0,3}"
     r"(?:house|flat|apartment|home|place|bungalow|cottage|condo)\s+(?:in|on|at)\s+.+)$",
     fr._lives),
    ("work", _S + r"works?\s+(?:remotely\s+)?from\s+(?P<v>[A-Z][\w-]+(?:\s+[A-Z][\w-]+)*)",
     fr._work_from),
    ("work", _S + rf"works?\s+(?:on|in)\s+(?:the\s+)?(?P<v>[\w' -]+?\s{_TEAM})\b", fr._on_team),
    ("work", _S +
     r"(?:work|works|working)\b(?:\s+(?:part-time|full-time|now|remotely|there))*\s+"
     r"(?:as\s+(?P<r>[^,]+?)\s+)?(?:at|for)\s+(?P<v>.+)$", fr._works),
    ("join|start|new job|is now at|a job", _S +
     r"(?:joined|joins|has joined|have joined|started at|started with|starts at|start at|"
     r"new job at|is now at|(?:took|got) a job(?:\s+as\s+(?P<r>[^,]+?))?\s+(?:at|with))\s+"
     r"(?P<v>.+)$", fr._joined),
    ("retired", r"^(?P<s>.+?)\s+(?:has |have |had |'s |just |finally )?retired\b", fr._retired),
    ("opened", _S +
     r"opened\s+(?:her|his|my|our|their)\s+own\s+(?:[\w-]+\s+)?(?:studio|practice|"
     r"business|company|firm|restaurant|place|shop|agency|clinic|bakery|cafe)(?:,|\s+called)?"
     r"\s+(?P<v>[A-Z].*)$", fr._employer_only),
    ("manages|runs|leads", _S +
     r"(?:manages|runs|leads)\s+(?:a|the)\s+[\w -]+?\s+(?:for|at)\s+(?P<v>[A-Z].*)$",
     fr._employer_only),
    ("report", _S + r"(?:report|reports|reporting)\s+(?:directly\s+)?(?:in\s+)?to\s+(?P<v>.+)$",
     fr._reports),
    ("team|ward|unit|icu|squad|depart|crew|pod|tribe|lab|group|division", _S[:-2] +
     rf"(?:\s+(?:am|is|are|was|were)|'m|'re)\s+(?:now\s+|still\s+|back\s+)?(?:on|in)"
     rf"\s+(?:the\s+)?(?P<v>[\w' -]+?\s{_TEAM})\b", fr._on_team),
    ("team|ward|unit|icu|squad|depart|crew|pod|tribe|lab|group|division", _S +
     r"(?:moved|transferred|switched|been moved|moved over|went|joined|rotated|been "
     rf"transferred|been put|gone)\s+(?:over\s+|back\s+)?(?:to|into|onto|on)?\s*(?:the\s+)?"
     rf"(?P<v>[\w' -]+?\s{_TEAM})\b", fr._on_team),
    ("play", _S + r"plays?\s+for\s+(?P<v>.+)$", fr._plays_for),
    ("promoted", _S +
     r"(?:got |been |was |has been |have been |'ve been |'s been |just )*promoted\s+to\s+"
     r"(?P<v>.+)$", fr._promoted),
    ("go to|goes to", _S +
     r"(?:goes|go)\s+to\s+(?P<v>(?:the\s+)?[A-Z][\w' -]*?(?:School|Primary|Academy|College|"
     r"Gymnasium|Grundschule|Prepa|Colegio|Kindergarten|Nursery|High)\b.*)$", fr._school),
    # changes
    ("chang|mov|switch|push|resched|rebook|bump|rais|cut|lower|reduc|increas|upgrad|"
     "downgrad|extend|brought forward|updat|reissu|renew|transfer|shift|delay|postpon|"
     "put back|reset|relocat", _S + _CHANGE +
     r"\s+(?P<o>[^,;:]+?)\s+(?:up\s+|back\s+|forward\s+|over\s+)?(?:to|as|"
     r"until|till|into)\s+(?P<v>.+)$", fr._changed),
    (":", _S + r"(?:rebooked|changed|moved|updated)\s+(?P<o>[^:]+?):\s*(?P<v>.+)$", fr._changed),
    ("mov|chang|slipped|push|resched|bump|shift|delay|postpon|brought forward|extend|"
     "rais|went up|went down|increas|dropped|fell|rose|upgrad|switch|relocat|reissu|emigrat|"
     "cut|lower|reduc|rebook",
     r"^(?P<o>.+?)\s+(?:has |have |had |was |were |got |has been |have been |is being |just |"
     rf"finally |all |'ve |'s |been )*{_MOVED}(?:\s+(?:again|back|up|forward|over|out|house))?"
     r"(?:\s+(?:by\s+)?(?:a|an|one|two|three|four|five|six|\d+)\s+(?:day|week|month|hour)s?)?"
     r",?\s+(?:to|into|until|till|in with|in|for(?=\s+(?:\d|mon|tue|wed|thu|fri|sat|sun|jan|feb|"
     r"mar|apr|may|jun|jul|aug|sep|oct|nov|dec|next|the\s+\d)))\s+(?P<v>.+)$", fr._slipped),
    ("slipped|push|delay|postpon",
     r"^(?P<o>.+?)\s+(?:has |have |was |got |has been )?(?:slipped|pushed back|was pushed|"
     r"got pushed|delayed|postponed)\s+(?:by\s+)?(?:a|an|one|two|three|four|five|six|\d+)"
     r"\s+(?:day|week|month)s?\s*$", fr._slipped),
    ("push|mov|resched|postpon|delay|bump", _S +
     r"(?:pushed|moved|rescheduled|postponed|delayed|bumped)\s+(?P<o>[^,;]+?)(?:\s+again|"
     r"\s+back)?$", fr._pushed_it),
    # amounts
    ("weigh", _S + r"weighs?\s+(?P<v>.+)$", fv._weighs),
    ("kg|kilo|lb|stone",
     r"^(?P<s>)(?:(?:down|up|back up|back down|now)\s+to\s+)?(?P<v>\d[\d.,]*\s*(?:kg|kilos?|"
     r"lbs?|stone)\b.*)$", fv._weighs),
    ("has|have|employ",
     r"^(?P<s>.+?)\s+(?:has|have|employs|employ)\s+(?:about\s+|around\s+|roughly\s+|now\s+)?"
     r"(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+"
     r"(?P<u>[a-z]+)\b", fv._headcount),
    ("we", r"^(?:we|we're|we are)\s*(?:now\s+)?(?P<n>\d+)(?:\s+(?:people|of us|strong|staff))?"
     r"(?:\s+now)?(?:\s+on\s+(?P<t>[^,]+?))?(?:\s+now)?(?:\s+with\b.*)?$", fv._we_are),
    ("request",
     r"^(?P<s>.+?)\s+(?:gets?|allows?|is capped at|are capped at|is limited to|are limited "
     r"to|have|has)\s+(?P<v>[\d,]+\s+requests?\s+(?:per|a|an)\s+\w+.*)$", fv._rate_limit),
    ("cost|rent|sell|goes for|go for|pay",
     r"^(?P<s>.+?)\s+(?P<verb>costs?|costs us|rents? for|rents? at|sells? for|goes for|go "
     r"for|pays?)\s+(?:us\s+)?(?P<v>(?:about\s+|around\s+)?[£€$]?\s?\d.*)$", fv._costs),
    ("do|serve|see|seat|sell", _S +
     r"(?P<verb>do|does|serve|serves|see|sees|seat|seats|sell|sells)\s+(?:about\s+|around"
     r"\s+|roughly\s+|up to\s+)?(?P<n>\d[\d,]*)\s+(?P<u>[a-z]+)(?P<rest>.*)$", fv._counted),
    ("best|pb|fastest",
     r"\b(?P<v>\d{1,2}:\d{2}(?::\d{2})?)\b.*\b(?:my best|personal best|pb|fastest)\b",
     fv._best),
    ("shift|night|days|lates|earlies", _S +
     r"(?:do|does|work|works|doing|working|gone onto|go onto|moved onto|am on|'m on|"
     r"is on|are on)\s+(?P<v>(?:permanent\s+|mostly\s+|only\s+|all\s+)?(?:[\w-]+\s+){0,3}?"
     r"(?:shifts|nights|days|lates|earlies))\b", fv._shifts),
    # schedules
    ("has|have|'s got", r"^(?P<s>[A-Z][\w-]*|(?:my|our)\s+\w+)\s+(?:has|have|has got|'s got)\s+"
     r"(?P<e>[a-z][\w' -]*?)\s+(?P<v>(?:on|at|every)\s+.+)$", fv._has_event),
    ("booked|scheduled|planned|pencilled|penciled|arranged|due",
     r"^(?P<s>.+?)\s+(?:is\s+|are\s+|was\s+|'s\s+|got\s+|been\s+)?(?:booked|scheduled|planned|"
     r"pencilled in|penciled in|arranged|due)\s+(?:for|on)?\s*(?P<v>.+)$", fv._booked_for),
    ("climb|swim|run|train|practi|play|meet|rehears|danc|cycl|ride|fly|flies|sing|walk|hike", _S
     + r"(?P<verb>climb|swim|run|train|practise|practice|play|meet|rehearse|dance|cycle|"
     r"ride|fly|flies|sing|walk|hike)\s+(?P<o>(?:to\s+[A-Z][\w-]*\s*|[a-z]+\s+)?)"
     r"(?P<v>(?:on|every)\s+.+)$", fv._activity),
    ("open",
     r"^(?P<s>.+?)\s+(?:is\s+|are\s+|'s\s+|'re\s+)?(?:now\s+)?(?:open|opens)\s+"
     r"(?:for\s+\w+\s+)?"
     r"(?:from\s+)?(?P<v>(?:at\s+)?\d.+)$", fv._open),
    ("play", _S + r"play\s+(?P<v>.+?)\s+in\s+the\s+(?P<room>dining room|bar|kitchen|shop|store|"
     r"restaurant|office|lobby|waiting room|salon)\b", fv._music_in),
    ("close|locks up",
     r"^(?P<s>.+?)\s+(?:closes|close|locks up|will close)\b(?P<v>.*\b(?:on|every)\s+\w+days?"
     r"\b.*)$", fv._closes),
    ("arriv|come|deliver",
     r"^(?P<s>.+?)\s+(?:arrives?|comes?|is delivered|are delivered|gets delivered)\b.*?\b"
     r"(?P<v>(?:on|every)\s+(?:mon|tue|wed|thu|fri|sat|sun|day|week).*)$", fv._booked_for),
    # tastes
    ("use|using|back to|now on|run on|runs on|is on|are on|code in|live in|work in", _S +
     r"(?:use|uses|using|switched to|went back to|back to|now on|run on|runs on|is on|"
     r"are on|code in|live in|work in)\s+(?P<v>.+)$", fv._uses),
    ("use|using|switch|moved to|went back to", _S +
     r"(?:use|uses|using|switched to|switch to|moved to|went back to)\s+" + fh._TOOL +
     r"(?:\s+now)?\s+for\s+(?P<p>.+)$", fh.tool_for),
    ("do|does|write|track|keep|edit|plan|manage|draw|store|log|record|organi|build|make", _S +
     r"(?:do|does|write|writes|track|tracks|keep|keeps|edit|edits|plan|plans|manage|manages|"
     r"draw|draws|store|stores|log|logs|record|records|organise|organises|organize|organizes|"
     r"build|builds|make|makes)\s+(?P<p>(?:my|our|the|all)\s+[\w -]+?|[a-z][\w-]*(?:\s+"
     r"[a-z][\w-]*)?)\s+(?:in|on|with|using)\s+" + fh._TOOL + r"(?:\s+now)?$", fh.tool_in),
    ("prefer|rather", _S +
     r"(?:prefer|prefers|'d rather have|would rather have)\s+(?P<v>.+)$", fh.preference),
    ("take my|takes my|like my|likes my|eat my|eats my|drink my|drinks my|have my|has my", _S +
     r"(?:take|takes|like|likes|eat|eats|drink|drinks|have|has)\s+my\s+(?P<d>(?!coffee\b|tea\b)"
     r"[a-z]+)\s+(?P<v>(?:with\s+|without\s+)?[a-z][\w-]*(?:\s+[a-z][\w-]*)?)(?:\s+now|\s+these"
     r"\s+days)?$", fh.taken),
    ("my coffee|my tea", r"\b(?:take|have|like|drink)\s+my\s+(?P<d>coffee|tea)\s+(?P<v>.+)$",
     fv._coffee),
    ("my coffee|my tea", r"^(?P<v>.+?)\s+in\s+my\s+(?P<d>coffee|tea)\b", fv._sugar),
    ("drink", _S + r"(?:drink|drinks|drinking)\s+(?P<v>(?!my\b).+)$", fv._drinks),
    ("seat",
     r"\b(?:prefer|rather|like|want|always book|always pick|choose|book)\b.*?\b(?P<v>aisle|"
     r"window|middle|exit[- ]row)\s+seats?\b", fv._seat),
    ("listen", _S + r"listen(?:s|ing)?\s+to\s+(?P<v>.+)$", fv._listens),
    *((_ADDITIVE_TRIGGERS[name], _S + pattern + r"\s+(?P<v>.+)$", fv._additive_verb(name))
      for name, pattern in _ADDITIVE_VERBS.items()),
    ("climb|swim|run|cycle|row",
     r"^(?P<s>(?:i|we|[A-Z][\w-]*)(?:\s+and\s+(?:i|[A-Z][\w-]*))?)\s+(?:also\s+|now\s+|"
     r"still\s+)?(?P<v>climb|swim|run|cycle|row)s?\s+(?:at|with|in)\s+.+$", fv._additive_verb(
     "does" )),
    # statuses
    ("married|engaged|divorced|separated", _S +
     r"(?:got|are|is|'re|'s|just got|have got|are now|got officially)\s+(?P<v>married|"
     r"engaged|divorced|separated)\b", fv._relationship),
    ("sprain|broke|fractur|hurt|injur|twist|pulled|tore|strain|disloc", _S +
     r"(?P<verb>sprained|broke|fractured|hurt|injured|twisted|pulled|tore|strained|"
     r"dislocated)\s+(?P<o>(?:my|his|her|their|a)\s+[\w ]+?)(?:\s+(?:with|while|at|playing|"
     r"bouldering|running|doing|lifting|in|on)\b.*)?$", fv._injured),
    ("applied|got a place|got into|accepted|enrolled|signed the lease", _S +
     r"(?P<verb>applied for|got a place on|got a place at|got into|was accepted (?:to|on|"
     r"into)|got accepted (?:to|on|into)|enrolled (?:in|on)|signed the lease (?:for|on))\s+"
     r"(?P<o>.+)$", fv._status_verb),
    ("is|are|was|were|got|been|'s",
     r"^(?P<s>(?:(?!\b(?:is|are|was|were|and|but|when|if|that)\b)[^,]){1,50}?)\s*(?:\s+is|\s+are|"
     r"\s+was|\s+were|\s+got|\s+has been|\s+have been|(?<=\bit)'s|(?<=\bthat)'s|\s+had been)\s+"
     r"(?:now\s+|"
     r"finally\s+|just\s+|officially\s+|already\s+)?(?P<v>(?:being\s+)?(?:[a-z]+ed|paid|sent|"
     r"done|built|won|lost|sold|given|taken|held|written|broken|stolen|chosen|shut|begun))\b"
     r"(?P<end>\s*$)?(?!\s+(?:by|for|as|"
     r"with|from|into|onto|that|the|a|an|my|our|his|her|their|it|them|up|out|off|down|over|at|"
     r"of|about|in\s+(?-i:[A-Z])|on\s+(?:the|my|our|a)|today|tonight|this\s+\w+)\b)",
     fh.participle),
    ("learning to", _S + r"(?:is|are|am|'m|'re)\s+learning\s+to\s+(?P<v>[a-z]+)\b",
     fv._learning_to),
    ("finished|completed|passed", _S +
     r"(?:finished|completed|passed)\s+(?P<y>(?:year|term|semester|module)\s+\w+)\s+of\s+"
     r"(?P<o>.+)$", fv._course_year),
    ("passed", _S + r"passed\s+(?:his|her|my|their|the)\s+(?P<v>[a-z]+)\s+test\b",
     fv._passed_test),
    ("renewed|approved|resolved|closed|cancel|rejected|completed|launched|merged|"
     "shipped|fixed|paused|shelved|scrapped",
     r"^(?P<s>(?:(?!\b(?:is|are|was|were|until|and|but|when|if)\b)[^,]){1,40}?)\s+"
     r"(?:was\s+|were\s+|is\s+|are\s+|got\s+|has been\s+|have been\s+)?"
     r"(?P<v>renewed|approved|resolved|closed|cancelled|canceled|rejected|completed|launched|"
     r"merged|shipped|fixed|paused|shelved|scrapped)\b"
     r"(?!\s+(?:the|a|an|my|our|his|her|their|it)\b)", fv._participle_status),
    # places
    ("hold|keep|has|have|looking after|looks after",
     r"^(?P<s>.+?)\s+(?:is holding|are holding|holds|keeps|has|have|is keeping|is looking "
     r"after|looks after)\s+(?P<o>(?:the|our|my)\s+(?:[\w-]+\s+){0,2}(?:keys?|passports?|"
     r"documents|remote|card))\b", fv._holds),
    ("put|keep|kept|left|stored|store|hid|locked", _S +
     r"(?:put|keep|kept|left|stored|store|hid|hide|locked)\s+(?P<o>(?:my|our|the|his|her)"
     r"\s+[\w' -]+?)\s+(?P<v>(?:in|into|on|under|inside|behind|at)\s+.+)$", fv._put),
    ("park", _S + r"park(?:s|ed)?\s+(?P<v>(?:in|at|on)\s+.+)$", fv._parks),
    # duties, tools, providers
    (" by ",
     r"^(?P<s>.+?)\s+(?:is|are|was|were|'s|'re)\s+(?:now\s+|currently\s+)?(?P<verb>owned|run|kept|"
     r"handled|done|written|maintained|managed|led|covered|organised|organized|looked after)"
     r"\s+by\s+(?P<v>.+)$", fv._owned_by),
    ("own", r"^(?P<v>.+?)(?<!\bhis)(?<!\bher)(?<!\bmy)(?<!\bour)(?<!\btheir)(?<!\bits)\s+"
     r"(?:now\s+)?(?:owns|own)\s+(?P<s>.+)$", fv._owns),
    ("call",
     r"^(?P<v>.+?)\s*(?:'m|'re|'s|\s+is|\s+are|\s+am|\s+will be)\s+(?:now\s+)?on[ -]call"
     r"(?:\s+for\s+(?P<s>[\w -]+?))?(?:\s+(?:this|next|tonight|today|until|from)\b.*)?$",
     fv._on_call),
    ("handed|passed|gave|reassigned|transferred",
     r"^(?P<a>.+?)\s+(?:handed|passed|gave|reassigned|transferred)\s+(?P<s>(?:the|our|my|his|her|"
     r"their)\s+[\w' -]+?)\s+(?:over\s+)?to\s+(?P<v>(?-i:[A-Z])[\w-]*(?:\s+(?-i:[A-Z])[\w-]*)?)$",
     fv._took_over),
    ("over",
     r"^(?P<v>.+?)\s+(?:took|has taken|have taken|is taking|will take)\s+over\s+(?P<s>.+)$",
     fv._took_over),
    ("hired",
     r"\bhired\s+(?:an?\s+[\w ]+?,\s+)?(?P<v>[A-Z][^,]*?),?\s+to\s+(?:run|do|handle|manage|"
     r"look after|take care of)\s+(?P<s>.+)$", fv._hired),
    ("does|do |write|run|handle|manage|organis|organiz|cover|sorts|plans|looks after|"
     "takes care|in charge|responsible|will",
     r"^(?P<v>.+?)\s+(?:does|do|writes|write|runs|run|handles|handle|manages|manage|organises|"
     r"organizes|covers|sorts|plans|looks after|look after|takes care of|take care of|"
     r"is in charge of|are in charge of|"
     r"'s in charge of|is responsible for|are responsible for|will do|will run|will handle)"
     r"\s+(?P<s>.+)$", fv._does),
    ("bank", _S + r"banks?\s+with\s+(?P<v>.+)$", fv._banks),
    ("deal|plan|contract|tariff",
     r"^(?=.*\b(?:sim|phone|mobile)\b).*?\b(?:deal|plan|contract|tariff)\s+(?:is\s+)?with\s+"
     r"(?P<v>[A-Z].*)$", fv._carrier),
    ("through|via",
     r"^(?P<s>.+?)\s+(?:go|goes|are booked|is booked|are made|is made|are taken|is taken|"
     r"come in|comes in|are done|is done)\s+(?:through|via)\s+(?P<v>.+)$", fv._channel),
    ("through|via| on | with ",
     r"^(?P<a>.*?)\b(?P<verb>take|takes|book|books|handle|handles|process|processes|deliver|"
     r"delivers|order|orders)\s+(?P<s>(?:[\w' -]*?\s+)?)(?:only\s+)?(?:through|via|on|with)"
     r"\s+(?P<v>(?:[A-Z]|our own|my own|the\s+[A-Z]).*)$", fv._channel),
    ("books|accounts|bookkeeping",
     r"\b(?:run|runs|keep|keeps|do|does)\s+(?:the|our)\s+(?:books|accounts|bookkeeping)\s+"
     r"(?:in|on|with)\s+(?P<v>.+)$", fv._books),
    ("books|accounts|bookkeeping",
     r"^(?:the\s+|our\s+)?(?:accounts|books|bookkeeping)\s+(?:are|is)\s+(?:kept\s+|done\s+)?"
     r"(?:in|on)\s+(?P<v>.+)$", fv._books),
    ("insured",
     r"^(?P<s>.+?)\s+(?:is|are)\s+(?:now\s+)?insured\s+(?:with|by|through)\s+(?P<v>.+)$",
     fv._insured),
    ("come|supplied|arriv",
     r"^(?P<s>.+?)\s+(?:comes?|is supplied|are supplied|arrives?)\s+(?:from|by)\s+(?P<v>.+)$",
     fv._supplied),
    ("from",
     r"^(?P<a>.*?)\b(?:buy|buys|get|gets|order|orders|source|sources)\s+(?:our\s+|the\s+|all"
     r"\s+(?:our\s+)?)?(?P<s>[a-z][\w ]*?)\s+from\s+(?P<v>.+)$", fv._supplied),
    ("back to", r"\bback to\s+(?P<v>[A-Z].+?)\s+for\s+(?P<s>[\w ]+)$", fv._supplied),
    ("make", r"\bmake\s+(?:our|my)\s+own\s+(?P<s>[\w ]+)", fv._make_own),
    ("registered|signed up", _S + r"(?:registered|signed up)\s+with\s+(?P<v>.+)$",
     fv._registered),
    ("see", _S + r"sees?\s+(?P<v>(?:Dr|Dra|Doctor)\s+[A-Z].*)$", fv._registered),
    # devices and names
    ("driv", _S + r"(?:drive|drives|driving)\s+(?P<v>(?:a|an|the|my|our)\s+.+)$", fv._drives),
    ("got|get|bought|buy|have|has|picked up|ordered|run with|runs with|running with|"
     "use|using|switched to|upgraded to", _S +
     r"(?:got|get|bought|buy|have|'ve got|has|picked up|ordered|run with|runs with|running"
     r" with|use|uses|using|switched to|upgraded to)\s+(?:myself\s+)?(?:a new|a|an|the|my|our|"
     r"new)\s+(?P<v>.+)$", fv._got_device),
    ("switched from", r"\bswitched\s+from\s+(?P<x>.+?)\s+to\s+(?P<y>.+)$", fv._switched_from),
    ("traded|swapped|exchanged|replaced",
     r"\b(?:traded|swapped|exchanged|replaced)\s+(?:in\s+)?(?:the\s+|my\s+|our\s+)?(?P<x>.+?)"
     r"\s+(?:in\s+)?(?:for|with)\s+(?:a|an|the|my|our)?\s*(?P<y>.+)$", fv._swapped),
    (" by", _S + r"(?:goes|go|going)\s+by\s+(?P<v>.+)$", fv._goes_by),
    ("called|named|known as",
     r"^(?P<s>.+?)\s+(?:is|are|'s|was)\s+(?:now\s+)?(?:called|named|known as)\s+(?P<v>.+)$",
     fv._called),
    ("call|nam",
     r"^(?P<a>.*?)\b(?:call|calling|name|naming)\s+(?P<s>(?:the|our|my)\s+[\w ]+?)\s+"
     r"(?P<v>[A-Z].+)$", fv._called),
    ("renamed|rebranded",
     r"\b(?:renamed|rebranded)\s+(?P<s>(?:the|our|my)\s+(?-i:[a-z])[\w' ]*?)\s+(?:to\s+|as\s+)?"
     r"(?P<v>(?:the\s+)?[A-Z].+)$", fv._called),
    ("renamed|rebranded",
     r"^(?P<s>.+?)\s+(?:has been|have been|was|were|got|is being|has|have)\s+(?:renamed|"
     r"rebranded)\s+(?:to\s+|as\s+)?(?P<v>.+)$", fv._called),
    ("renamed|rebranded",
     r"^(?P<s>(?:the|our|my)\s+[\w' -]+?|(?-i:[A-Z])[\w' -]+?)\s+(?:renamed itself|rebranded|"
     r"changed (?:its|their) name)\s+(?:to|as)\s+(?P<v>(?:the\s+)?(?-i:[A-Z]).+)$", fv._called),
    ("meet|start|begin|finish|end|take place|kick off|kicks off",
     r"^(?P<s>(?:the|our|my|[A-Z][\w'-]*)\b[^,]{0,40}?)\s+(?:meets|meet|starts|start|begins|begin|"
     r"finishes|ends|takes place|kicks off)\s+(?:now\s+)?(?P<v>(?:on|at|every|from|in)\s+.+)$",
     fh.meets),
]  # fmt: skip


def _capitals(pattern: str) -> str:
    """A pattern's capital-letter classes kept case-sensitive under IGNORECASE."""
    return re.sub(r"\[A-Z[^\]]*\]", lambda m: f"(?-i:{m.group(0)})", pattern)


_RULES = [(t, re.compile(_capitals(p), _I), rule) for t, p, rule in _TABLE]


def _trigger_index() -> tuple[re.Pattern[str], dict[str, frozenset[int]]]:
    """One scan finds every rule a clause may match: a lookahead at each position for the
    longest trigger there, and each trigger stands for the rules of every trigger inside it."""
    own: dict[str, set[int]] = {}
    for i, (triggers, _, _) in enumerate(_RULES):
        for trigger in triggers.split("|"):
            own.setdefault(trigger.strip(), set()).add(i)
    rules = {t: frozenset(i for u, ids in own.items() if u in t for i in ids) for t in own}
    worded = sorted((t for t in own if t[0].isalpha()), key=len, reverse=True)
    alternatives = "|".join(re.escape(t) for t in worded)
    return re.compile(f"\\b(?=({alternatives}))"), rules


_TRIGGER_SCAN, _TRIGGERED = _trigger_index()
_SYMBOLS = tuple(t for t in _TRIGGERED if not t[0].isalpha())  # "@", ":", "'s got"
_DIGIT = re.compile(r"\d")
_COPULAS = (
    re.compile(
        r"^(?P<s>.+?)(?:\s+(?:is|are|am|will be|has been|have been|remains|"
        r"came back at|came in at|comes in at|stands at|is down to|is up to|went down to|"
        r"went up to)|"
        r"(?<=\bit)'s|(?<=\bhe)'s|(?<=\bshe)'s|(?<=\bthat)'s|(?<=\bthere)'s|'re|'m)\s+(?P<v>.+)$",
        _I,
    ),
    re.compile(r"^(?P<s>[^:]{2,40}):\s+(?P<v>.+)$"),
)
_FAMILY = re.compile(
    r"\b(?:my|our)\s+(?:sister|brother|mother|father|mum|dad|daughter|son|cousin|aunt|uncle|"
    r"niece|nephew|wife|husband|partner)\s+(?P<n>(?-i:[A-Z])[\w-]+\s+(?-i:[A-Z])[\w-]+)",
    _I,
)


def extract(text: str) -> list[Found]:
    """Every frame the rules read in ``text``, first reading of a (subject, attribute) kept."""
    ctx = Context()
    found: list[Found] = []
    parts = clauses(text)
    for n, clause in enumerate(parts, 1):
        ctx.lead_org = ""
        found += _clause(clause, ctx)
        if n < len(parts):
            _remember(clause, ctx)
    for m in _FAMILY.finditer(text):
        found += fv._family_name(m, ctx)
    kept: dict[tuple[str, str, tuple[str, ...]], Found] = {}
    for frame in found:
        kept.setdefault((frame[0], frame[1], frame[4]), frame)
    return list(kept.values())


def _clause(clause: str, ctx: Context) -> list[Found]:
    found = _read_clause(clause, ctx)
    diary = _DIARY.match(clause)
    if not found and diary is not None and diary.group(1).lower() in dictionary_words():
        # A note that opens with a verb in the past ("Moved to Utrecht.") is the speaker's.
        found = _read_clause("I " + clause[0].lower() + clause[1:], ctx)
    return found


_DIARY = re.compile(r"^([A-Z][a-z]+ed|Got|Took|Went|Began|Left|Joined|Made|Bought|Sold)\b(?!')")


def _read_clause(clause: str, ctx: Context) -> list[Found]:
    found: list[Found] = []
    lowered = clause.lower()
    candidates: set[int] = set()
    for hit in _TRIGGER_SCAN.finditer(lowered):  # most rules never apply: skip their patterns
        candidates |= _TRIGGERED[hit.group(1)]
    for symbol in _SYMBOLS:
        if symbol in lowered:
            candidates |= _TRIGGERED[symbol]
    for i in sorted(candidates):
        _, pattern, rule = _RULES[i]
        m = pattern.search(clause)
        if m is not None:
            found += rule(m, ctx)
    if _DIGIT.search(clause) or _OS.search(lowered):
        found += fv.versions(clause, ctx)
    if not found:
        for pattern in _COPULAS:
            m = pattern.search(clause)
            if m is not None:
                found = fc._copula(m, ctx, colon=pattern is _COPULAS[1])
                break
    if lex.ADDITIVE.search(clause):  # "I also lead ...": adds to what is known
        found = [(s, a, v, False, d) for s, a, v, _, d in found]
    return [f for f in found if f[0] and f[2]]


_FIRST_NAME = re.compile(r"^(?:(?:Dr|Dra|Mr|Mrs|Ms|Miss|Sister) )?[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")
_FIRST_THING = re.compile(
    r"\b(?:my|our|the)\s+(?:(?!(?:at|in|on|for|to|with|from|by|of|and|is|are)\b)[\w'-]+\s*){1,3}",
    _I,
)


def _remember(clause: str, ctx: Context) -> None:
    """What "she" and "it" will mean in the next clause."""
    named = _FIRST_NAME.match(clause)
    if named is not None and named.group(0).split()[0].lower() not in ("i", "we", "the", "my"):
        found = phrase(named.group(0).removesuffix("'s"), ctx)
        if found is not None:
            ctx.person = found
    if ctx.thing is None:
        first = _FIRST_THING.search(clause)
        if first is not None:
            ctx.thing = phrase(first.group(0).strip(), ctx)
