"""A generated state: thousands of orders, appeals, circulars and amending notifications as PDFs
(issue 46), seeded, made the way the real ones are made.

:func:`write_state` writes ``documents`` PDFs for one jurisdiction into a folder and returns what
each contains (:class:`GeneratedDocument`: kind, title, date, key, case number, the Act's
sections and the state's rules it cites, its numbered paragraphs), so that a test or a bench can
register them with their kind, title and date given and check what the pipeline read.

The mix is close to a real authority's website: mostly the authority's orders on complaints (2-30
pages, most of them short), some of the appellate tribunal's judgments on appeals, a few
circulars and a few notifications amending the state's rules. Wording and layout vary by a
seeded RNG per document, never fitted to one parser pattern: several house styles (the
authority's letterhead or a bare "BEFORE THE ..." heading, Helvetica, Times or a typewriter's
Courier, sizes 10-12.5, A4, Letter or Legal), numbers inline or hanging, running headers with
the case number, "Page 3 of 7" or "- 3 -" footers, paragraphs broken across pages, parties
"X ... Complainant / Versus / Y ... Respondent", dates as "Dated: 14.05.2020", "Date: 14/05/2020"
or "14th May, 2020", an operative ORDER with lettered or continued numbered directions, and a
signature, place and date at the foot. Fonts are embedded (em dashes and typographic quotes
survive) and each page's content stream is written directly: 19 ms of CPU a document, every
core for large states. :func:`changed_variant` writes the corrected version of one document (one
figure of its operative part changed), deterministically.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from civicsetu_pipelines_tests.generated_pages import Doc, Style, layout, write_pages

ACT = "Real Estate (Regulation and Development) Act, 2016"
# Kind of document -> its share of a state's documents (the rest of the mix is orders).
MIX = (("order", 0.78), ("appeal", 0.14), ("circular", 0.055), ("amendment", 0.025))
KIND_OF = {"order": "judgment", "appeal": "judgment", "circular": "circular",
           "amendment": "notification"}  # fmt: skip


@dataclass(frozen=True)
class GeneratedDocument:
    """One generated PDF and the facts it contains."""

    path: Path
    key: str
    kind: str  # the registry kind: judgment, circular or notification
    variety: str  # order (on a complaint), appeal, circular or amendment
    title: str
    date: dt.date  # its own date (the one printed as "Dated: ...", the day it was pronounced)
    jurisdiction: str
    index: int
    case_number: str | None  # "CC006000000012345", "AT006000000031234", "Circular No. 12/2021"
    sections: tuple[str, ...]  # the Act's sections it cites, as numbers ("18", "31")
    rules: tuple[str, ...]  # the state's rules it cites, as numbers
    paragraphs: int  # its numbered paragraphs (1 .. paragraphs)
    pages: int
    date_line: str = ""  # the words that print its date ("Dated: 14.05.2020")
    date_at: str = "head"  # where: "head" (its first page's heading) or "foot" (by the signature)
    amends_title: str | None = None  # what an amending notification amends
    change: str | None = None  # for a changed variant: what was changed


# ------------------------------------------------------------------------------------ the state


@dataclass(frozen=True)
class State:
    code: str
    name: str
    capital: str
    abbr: str  # the authority's short name: MahaRERA, GujRERA ...
    number: int  # the code in its case numbers (MahaRERA's "006")
    rules_title: str
    department: str


_CAPITALS = {"GUJARAT": "Gandhinagar", "MAHARASHTRA": "Mumbai", "KARNATAKA": "Bengaluru",
             "UTTAR_PRADESH": "Lucknow", "GOA": "Panaji", "BIHAR": "Patna", "KERALA":
             "Thiruvananthapuram", "TAMIL_NADU": "Chennai", "TELANGANA": "Hyderabad",
             "RAJASTHAN": "Jaipur", "HARYANA": "Panchkula", "PUNJAB": "Mohali", "ODISHA":
             "Bhubaneswar", "MIZORAM": "Aizawl", "WEST_BENGAL": "Kolkata"}  # fmt: skip
_ABBR = {"GUJARAT": "GujRERA", "MAHARASHTRA": "MahaRERA", "KARNATAKA": "K-RERA",
         "UTTAR_PRADESH": "UP RERA", "GOA": "Goa RERA", "TAMIL_NADU": "TNRERA",
         "TELANGANA": "TS RERA", "HARYANA": "HARERA"}  # fmt: skip
_RULES = {
    "GUJARAT": "Gujarat Real Estate (Regulation and Development) (General) Rules, 2017",
    "MAHARASHTRA": "Maharashtra Real Estate (Regulation and Development) (Registration of real "
    "estate projects, Registration of real estate agents, rates of interest and disclosures on "
    "website) Rules, 2017",
    "UTTAR_PRADESH": "Uttar Pradesh Real Estate (Regulation and Development) Rules, 2016",
}


def state_of(code: str, rules_title: str | None = None) -> State:
    """The names a generated state's documents print (its name from ``jurisdictions.yaml``)."""
    from civicsetu_pipelines.base import load_jurisdictions

    name = load_jurisdictions().by_code[code].name
    initials = "".join(w[0] for w in name.split() if w[0].isupper())
    return State(
        code=code, name=name, capital=_CAPITALS.get(code, name), abbr=_ABBR.get(code,
        f"{initials}-RERA"), number=6 if code == "MAHARASHTRA" else sum(map(ord, code)) % 30 + 1,
        rules_title=rules_title or _RULES.get(code,
        f"{name} Real Estate (Regulation and Development) Rules, 2017"),
        department=random.Random(code).choice(["Urban Development and Urban Housing Department",
            "Housing Department", "Urban Development Department",
            "Housing and Urban Development Department"]),
    )  # fmt: skip


# ------------------------------------------------------------------------------------ words


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_FIRST = _words("Rajesh Sunil Anita Meena Prakash Suresh Kavita Deepak Vijay Sunita Ramesh Neha "
                "Amit "
          "Pooja Sanjay Rekha Mahesh Nilesh Swati Arvind Jayesh Hetal Kiran Manoj Alka Dinesh "
          "Farhan Ayesha Joseph Mary Gurpreet Harpreet Venkatesh Lakshmi Subramanian Anil "
          "Bhavna Chirag Darshana Ketan Mitesh Parul Rupal Tushar Yogesh Zubin")  # fmt: skip
_LAST = _words("Shah Patel Desai Mehta Joshi Kulkarni Deshpande Patil Jadhav Iyer Nair Reddy Rao "
         "Sharma Verma Gupta Singh Khan D'Souza Fernandes Pillai Menon Chaudhary Trivedi Pandya "
         "Bhatt Parikh Gandhi Shetty Naik Kamat Agarwal Banerjee Mukherjee Das")  # fmt: skip
_FIRMS = _words("Shree Balaji Sai Siddhi Vinayak Sunrise Skyline Orchid Green Acres Royal Silver "
                "Oak "
          "Shubh Aakash Pushpak Ganga Narmada Kalpataru Suyog Riddhi Mangalam Param "
          "Tirupati Nandanvan Sahyadri Vrundavan Omkar")  # fmt: skip
_FIRM_KINDS = ("Developers Pvt. Ltd.", "Infrastructure LLP", "Builders", "Realty Limited",
               "Constructions", "Infracon Pvt. Ltd.", "Estates Private Limited", "Housing LLP",
               "Buildcon")  # fmt: skip
_PROJECTS = ("Heights", "Residency", "Park", "Enclave", "Greens", "Towers", "Avenue", "Paradise",
             "Gardens", "Elite", "Vista", "County")  # fmt: skip
_PLACES = ("Bopal", "Gota", "Thaltej", "Wagholi", "Hinjewadi", "Kharghar", "Panvel", "Vasai",
           "Whitefield", "Yelahanka", "Sector 62", "Gomti Nagar", "Vesu", "Adajan", "Kudasan",
           "Sargasan", "Raysan", "Dombivli", "Thane West", "Mira Road")  # fmt: skip
_MONTHS = _words("January February March April May June July August September October November "
           "December")  # fmt: skip
_COVID = ("the outbreak of the COVID-19 pandemic and the lockdown declared by the Government",
          "non-availability of sand and labour", "demonetisation",
          "delay in grant of permissions by the planning authority",
          "the stay granted by the National Green Tribunal on construction activities")  # fmt: skip


def _person(rng: random.Random) -> str:
    title = rng.choice(("Mr. ", "Mrs. ", "Ms. ", "Shri ", "Smt. ", ""))
    return f"{title}{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def _firm(rng: random.Random) -> str:
    return f"{rng.choice(('M/s. ', '', ''))}{rng.choice(_FIRMS)} {rng.choice(_FIRM_KINDS)}"


def _rupees(rng: random.Random, low: int, high: int) -> str:
    value = rng.randrange(low, high, 1000)
    digits = str(value)
    head, tail = digits[:-3], digits[-3:]
    groups = []
    while len(head) > 2:
        groups.insert(0, head[-2:])
        head = head[:-2]
    text = ",".join([g for g in [head, *groups] if g] + [tail])
    return rng.choice((f"Rs. {text}/-", f"Rs.{text}/-", f"INR {text}", f"Rs. {text}"))


def _ordinal(day: int) -> str:
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def date_text(day: dt.date, form: int) -> str:
    """A date as orders print it: 14.05.2020, 14/05/2020, 14-05-2020, 14th May, 2020,
    May 14, 2020, 14 May 2020."""
    forms = (f"{day:%d.%m.%Y}", f"{day:%d/%m/%Y}", f"{day:%d-%m-%Y}",
             f"{_ordinal(day.day)} {_MONTHS[day.month - 1]}, {day.year}",
             f"{_MONTHS[day.month - 1]} {day.day}, {day.year}",
             f"{day.day} {_MONTHS[day.month - 1]} {day.year}")  # fmt: skip
    return forms[form % len(forms)]


_SECTIONS = (3, 4, 7, 11, 12, 13, 14, 17, 18, 18, 18, 19, 31, 31, 34, 35, 36, 37, 38, 40, 71, 72)


class _Cites:
    """The citations a document makes, recorded as they are written."""

    def __init__(self, rng: random.Random, state: State) -> None:
        self.rng, self.state = rng, state
        self.sections: list[str] = []
        self.rules: list[str] = []

    def section(self, number: int | None = None, sub: bool = False) -> str:
        rng = self.rng
        n = number if number is not None else rng.choice(_SECTIONS)
        part = f"{n}({rng.randint(1, 3)})" if sub or rng.random() < 0.25 else str(n)
        if not self.sections:
            text = f"section {part} of the {ACT}"
        else:
            text = rng.choice((f"section {part} of the Act", f"Section {part} of the said Act",
                               f"section {part} of the RERA Act", f"Section {part} of the Act",
                               f"Sec. {part} of the Act",
                               f"section {part} of the {ACT}"))  # fmt: skip
        self.sections.append(str(n))
        return text

    def rule(self, number: int | None = None) -> str:
        rng, state = self.rng, self.state
        n = number if number is not None else rng.choice((3, 4, 5, 6, 10, 13, 16, 18, 18, 19, 21))
        part = f"{n}({rng.randint(1, 2)})" if rng.random() < 0.2 else str(n)
        if not self.rules:
            text = f"rule {part} of the {state.rules_title}"
        else:
            text = rng.choice((f"rule {part} of the said Rules", f"Rule {part} of the Rules",
                               f"rule {part} of the {state.rules_title}",
                               f"rule {part} of the {state.name} Rules"))  # fmt: skip
        self.rules.append(str(n))
        return text


# ------------------------------------------------------------------------------------ blocks


# A document is a list of blocks the layout flows onto pages:
#   ("center" | "left" | "right", text, bold)        one line (wrapped if too long)
#   ("para", text, bold)                             a paragraph (first-line indent per style)
#   ("num", "12", text)                              a numbered paragraph
#   ("item", "(a)", text)                            an indented, lettered item
#   ("party", name, role)                            a party with its role at the right margin
#   ("gap", points, None)
def _sentences(rng: random.Random, c: _Cites, ctx: dict[str, str], count: int) -> str:
    """``count`` sentences of an order's reasoning, each drawn from the bank and filled."""
    bank = (
        lambda: f"As per {c.section(18)}, if the promoter fails to complete or is unable to give "
        f"possession of an apartment in accordance with the terms of the agreement for sale, he "
        f"shall be liable on demand to the allottee to return the amount received by him with "
        f"interest at such rate as may be prescribed.",
        lambda: f"The rate of interest is prescribed in {c.rule(18)}, namely the State Bank of "
        f"India highest marginal cost of lending rate plus two per cent.",
        lambda: f"The respondent has not placed on record any document to show that the delay "
        f"was caused by {rng.choice(_COVID)}.",
        lambda: f"The project \u201c{ctx['project']}\u201d is registered with the Authority "
        f"under {c.section(3)} bearing registration No. {ctx['registration']}.",
        lambda: f"It is an admitted position that the agreement for sale was executed on "
        f"{ctx['agreement']} and the date of possession stated therein was {ctx['possession']}.",
        lambda: f"The promoter is bound by {c.section()} to comply with the obligations cast "
        f"upon him, and {c.rule()} specifies the manner in which the disclosure is to be made.",
        lambda: f"The {ctx['forum']} is of the considered view that the complainant is entitled to "
        "the relief claimed, subject to the adjustment of the amounts already refunded, if any.",
        lambda: f"The learned advocate for the respondent argued that the complaint is not "
        f"maintainable in view of {c.section(rng.choice((31, 71, 79)))}, which contention "
        f"cannot be accepted.",
        lambda: f"The complainant has paid an amount of {ctx['paid']} towards the total "
        f"consideration of {ctx['price']} as evident from the receipts placed on record.",
        lambda: "No material has been produced to show that the complainant consented to the "
        "extension of the date of possession.",
        lambda: f"Under {c.section(11, sub=True)}, the promoter shall be responsible for all "
        f"obligations, responsibilities and functions under the provisions of the Act or the "
        f"rules and regulations made thereunder.",
        lambda: f"The {ctx['forum']} notes that the revised date of completion declared at the "
        f"time of registration, i.e. {ctx['revised']}, cannot override the date agreed with the "
        f"allottee.",
        lambda: f"In terms of {c.rule(rng.choice((19, 21)))}, the interest shall be paid within "
        f"sixty days from the date of this order.",
        lambda: f"Reliance is placed on the judgment of the Hon'ble Supreme Court in Newtech "
        f"Promoters and Developers Pvt. Ltd. v. State of U.P. (2021 SCC OnLine SC 1044), "
        f"wherein it has been held that the unqualified right of the allottee to seek refund "
        f"under {c.section(18, sub=True)} is not dependent on any contingencies.",
        lambda: "The respondent has also failed to file its reply within the time granted, "
        "despite several opportunities.",
        lambda: f"The complainant has further sought compensation under {c.section(72)} read "
        f"with {c.section(71)}, which is to be adjudged by the Adjudicating Officer.",
        lambda: f"The quarterly progress reports uploaded by the respondent under "
        f"{c.section(11)} show that only {rng.randint(20, 85)} per cent of the work was "
        f"complete as on {ctx['revised']}.",
    )  # fmt: skip
    return " ".join(make() for make in rng.sample(bank, min(count, len(bank))))


def _filler_paragraphs(doc: Doc, rng: random.Random, c: _Cites, ctx: dict[str, str],
                       chars: int) -> None:  # fmt: skip
    """Numbered paragraphs of reasoning until about ``chars`` characters are written."""
    written = 0
    while written < chars:
        text = _sentences(rng, c, ctx, rng.choice((1, 2, 3, 3, 4, 5, 6, 8)))
        doc.num(text)
        written += len(text)


def _target_pages(rng: random.Random) -> int:
    """2-30 pages, skewed to short: most orders run 2-6 pages, a few 20 or more."""
    return min(30, 2 + int(rng.expovariate(1 / 3.2)))


def _context(rng: random.Random, state: State, day: dt.date) -> dict[str, str]:
    agreement = day - dt.timedelta(days=rng.randint(1200, 3200))
    possession = agreement + dt.timedelta(days=rng.randint(700, 1100))
    form = rng.randrange(6)
    registration = rng.choice((f"P5{rng.randint(1000, 1999)}000{rng.randint(10000, 99999)}",
                               f"PR/{state.code[:2]}/{rng.choice(_PLACES).upper()[:6]}/"
                               f"AUDA/RAA{rng.randint(1000, 9999)}/{agreement.year + 1}",
                               f"{state.abbr.replace(' ', '')}/PRJ/"
                               f"{rng.randint(100, 9999)}/{agreement.year + 1}"))  # fmt: skip
    return {
        "forum": "Authority",
        "project": f"{rng.choice(_FIRMS)} {rng.choice(_PROJECTS)}"
        + rng.choice(("", "", " Phase II", " Phase-I", " Wing B")),  # fmt: skip
        "place": f"{rng.choice(_PLACES)}, {state.capital}",
        "registration": registration,
        "agreement": date_text(agreement, form),
        "possession": date_text(possession, form),
        "revised": date_text(possession + dt.timedelta(days=rng.randint(200, 900)), form),
        "paid": _rupees(rng, 300000, 9000000),
        "price": _rupees(rng, 2500000, 25000000),
        "flat": f"{rng.choice(('Flat', 'Flat', 'Unit', 'Shop', 'Apartment'))} No. "
        f"{rng.choice('ABCDE')}-{rng.randint(1, 24)}{rng.randint(1, 8):02d}",
    }


# ------------------------------------------------------------------------------------ kinds


def _order(
    rng: random.Random, state: State, day: dt.date, change: bool
) -> tuple[Doc, dict[str, Any]]:
    """The authority's order on a complaint (its chairperson, a member or the adjudicating
    officer), 2-30 pages."""
    doc, c = Doc(), _Cites(rng, state)
    ctx = _context(rng, state, day)
    serial = rng.randint(1000, 99999)
    case = rng.choice((f"CC{state.number:03d}{serial:012d}", f"CC{state.number:03d}{serial:012d}",
                       f"{serial % 900 + 1} of {day.year - rng.randint(0, 2)}",
                       f"{state.abbr.replace(' ', '')}/CMP/{day.year - 1}/{serial:05d}",
                       f"RERA/{state.code[:3]}/C/{serial}/{day.year - 1}"))  # fmt: skip
    complainants = [_person(rng) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    respondent = _firm(rng)
    dated = rng.randrange(6)
    letterhead = rng.random() < 0.5
    if letterhead:
        doc.add("center", f"{state.name.upper()} REAL ESTATE REGULATORY AUTHORITY", True)
        doc.add("center", rng.choice((state.capital.upper(), f"{state.capital}",
                                      f"({state.abbr})")), False)  # fmt: skip
    else:
        doc.add("center", f"BEFORE THE {state.name.upper()} REAL ESTATE REGULATORY AUTHORITY "
                f"AT {state.capital.upper()}", True)  # fmt: skip
        if rng.random() < 0.3:
            doc.add("center", rng.choice(("(Adjudicating Officer)", "Bench of the Chairperson")))
    doc.add("gap", rng.choice((6, 12, 18)))
    label = rng.choice(("COMPLAINT NO.", "Complaint No.", "COMPLAINT NO:", "Complaint No:-"))
    doc.add(rng.choice(("center", "left", "left")), f"{label} {case}", True)
    if rng.random() < 0.6:
        filed = day - dt.timedelta(days=rng.randint(60, 700))
        doc.add("left", f"Date of filing: {date_text(filed, dated)}")
    doc.add("gap", 6)
    role = "Complainants" if len(complainants) > 1 else "Complainant"
    for n, person in enumerate(complainants, 1):
        doc.add("party", f"{n}. {person}" if len(complainants) > 1 else person,
                role if n == len(complainants) else "")  # fmt: skip
    if rng.random() < 0.5:
        doc.add("left", f"Residing at {rng.randint(1, 300)}, {rng.choice(_PLACES)}, "
                        f"{state.capital}")  # fmt: skip
    doc.add("center", rng.choice(("Versus", "VERSUS", "V/s.", "Vs.")), False)
    doc.add("party", respondent, "Respondent")
    if rng.random() < 0.7:
        doc.add("left", f"Through its Director/Partner, having office at {ctx['place']}")
    doc.add("gap", 6)
    coram = rng.choice((f"Shri {rng.choice(_FIRST)} {rng.choice(_LAST)}, Chairperson",
                        f"Dr. {rng.choice(_FIRST)} {rng.choice(_LAST)}, Member",
                        f"Shri {rng.choice(_FIRST)} {rng.choice(_LAST)}, Adjudicating Officer",
                        f"Smt. {rng.choice(_FIRST)} {rng.choice(_LAST)}, "
                        f"Member-I/{state.abbr}"))  # fmt: skip
    doc.add("left", rng.choice(("Coram: ", "CORAM: ", "Coram:- ")) + coram)
    if rng.random() < 0.6:
        doc.add("left", f"Appearance: Adv. {rng.choice(_FIRST)} {rng.choice(_LAST)} for the "
                        f"complainant; Adv. {rng.choice(_FIRST)} {rng.choice(_LAST)} for the "
                        "respondent.")  # fmt: skip
    own = date_text(day, dated)
    date_line = rng.choice((f"Dated: {own}", f"Date: {own}", f"Dated: {own}", f"DATE : {own}",
                            f"(Date: {own})"))  # fmt: skip
    head_date = rng.random() < 0.55
    if head_date:
        doc.add(rng.choice(("right", "left", "center")), date_line, False)
    doc.add("gap", 8)
    doc.add("center", rng.choice(("ORDER", "O R D E R", "ORDER", "FINAL ORDER")), True)
    doc.running = rng.choice((f"Complaint No. {case}", f"{case}", "", ""))
    pages = _target_pages(rng)
    chars = int(pages * rng.randint(2400, 3400) - 1500)
    doc.num(f"The complainant{'s have' if len(complainants) > 1 else ' has'} filed this complaint "
            f"seeking directions to the respondent to refund the amount paid along with interest "
            f"under {c.section(18)} in respect of the booking of {ctx['flat']} in the "
            f"respondent's project known as \u201c{ctx['project']}\u201d situated at "
            f"{ctx['place']}.")  # fmt: skip
    doc.num(_sentences(rng, c, ctx, rng.randint(2, 4)))
    doc.num(f"The matter was heard on {date_text(day - dt.timedelta(days=rng.randint(7, 90)), dated)}"  # noqa: E501
            f". {rng.choice(('The respondent appeared through its advocate and', 'The respondent'))}"  # noqa: E501
            f" contended that the delay in completion of the project was due to "
            f"{rng.choice(_COVID)}, which were beyond its control and constitute force majeure "
            f"within the meaning of the agreement.")  # fmt: skip
    _filler_paragraphs(doc, rng, c, ctx, max(0, chars))
    interest = rng.choice(("two", "two", "one", "three"))
    costs = _rupees(rng, 10000, 50000)
    if change:  # a corrected order: other costs, every other word the same
        other = random.Random(costs)
        while (corrected := _rupees(other, 10000, 50000)) == costs:
            pass
        costs = corrected
    directions = [
        f"The complaint {case} is {rng.choice(('allowed', 'partly allowed', 'allowed'))}.",
        f"The respondent is directed to refund to the complainant the amount of {ctx['paid']} "
        f"with interest at the rate of SBI highest MCLR plus {interest} per cent as prescribed "
        f"under {c.rule(18)} from the date of each payment till the actual date of refund.",
        f"The respondent shall pay costs of {costs} to the complainant within "
        f"{rng.choice(('thirty', 'sixty', '45'))} days from the date of this order.",
        rng.choice((lambda: "The charge of the aforesaid amount shall be on the unsold flats "
                    "of the project.", lambda: "In case of failure, the complainant is at "
                    f"liberty to proceed under {c.section(40)}.",
                    lambda: "No order as to costs otherwise."))(),
    ]  # fmt: skip
    operative = rng.choice(("letters", "letters", "numbers", "inline"))
    doc.add("gap", 8)
    if operative == "inline":
        doc.num(f"In view of the above, the following order is passed: {' '.join(directions)}")
    else:
        heading = rng.choice(("ORDER", "ORDER", "O R D E R", "FINAL ORDER", "ORDER:"))
        doc.add(rng.choice(("center", "left")), heading, True)
        for n, text in enumerate(directions):
            if operative == "numbers":
                doc.num(text)
            else:
                doc.add("item", rng.choice(("({})", "{})", "{}.")).format("abcdefgh"[n]), text)
    _signature(doc, rng, coram, state, date_line if not head_date else None, day, dated)
    return doc, {"case": case, "c": c, "date_line": date_line, "date_at": "head" if head_date
                 else "foot", "title": f"{' and '.join(complainants)} v. {respondent} "
                 f"(Complaint No. {case}, {state.abbr})", "costs": costs}  # fmt: skip


def _appeal(
    rng: random.Random, state: State, day: dt.date, change: bool
) -> tuple[Doc, dict[str, Any]]:
    """The appellate tribunal's judgment on an appeal against the authority's order."""
    doc, c = Doc(), _Cites(rng, state)
    ctx = {**_context(rng, state, day), "forum": "Tribunal"}
    serial = rng.randint(1000, 99999)
    case = rng.choice((f"AT{state.number:03d}{serial:012d}", f"AT{state.number:03d}{serial:012d}",
                       f"{serial % 400 + 1} of {day.year - rng.randint(0, 2)}"))  # fmt: skip
    below = f"CC{state.number:03d}{rng.randint(1000, 99999):012d}"
    appellant, respondent = _firm(rng), _person(rng)
    if rng.random() < 0.4:
        appellant, respondent = respondent, appellant
    dated = rng.randrange(6)
    doc.add("center", rng.choice(("BEFORE THE", "IN THE")), True)
    doc.add("center", f"{state.name.upper()} REAL ESTATE APPELLATE TRIBUNAL", True)
    doc.add("center", rng.choice((state.capital.upper(), f"AT {state.capital.upper()}")), False)
    doc.add("gap", 10)
    doc.add(rng.choice(("center", "left")), rng.choice(("APPEAL NO. ", "Appeal No. ",
                                                        "APPEAL NO.: ")) + case, True)  # fmt: skip
    doc.add(rng.choice(("center", "left")), f"In Complaint No. {below}")
    doc.add("gap", 6)
    doc.add("party", appellant, "Appellant")
    doc.add("center", rng.choice(("Versus", "V/s", "VERSUS")))
    doc.add("party", respondent, "Respondent")
    doc.add("gap", 6)
    judges = [f"{rng.choice(('SHRI', 'SHRI', 'SMT.', 'DR.'))} {rng.choice(_FIRST).upper()} "
              f"{rng.choice(_LAST).upper()}" for _ in range(2)]  # fmt: skip
    doc.add("left", f"CORAM: {judges[0]}, JUDICIAL MEMBER")
    doc.add("left", f"{' ' * 8}{judges[1]}, {rng.choice(('TECHNICAL', 'ADMINISTRATIVE'))} MEMBER")
    heard = date_text(day - dt.timedelta(days=rng.randint(10, 120)), dated)
    own = date_text(day, dated)
    if rng.random() < 0.5:
        doc.add("left", f"RESERVED ON : {heard}")
        doc.add("left", printed := f"PRONOUNCED ON : {own}")
        date_line = None
    else:
        date_line = printed = rng.choice((f"DATE: {own}", f"Dated: {own}"))
        doc.add("left", date_line)
    doc.add("gap", 8)
    doc.add("center", rng.choice(("JUDGMENT", "J U D G M E N T", "ORDER")), True)
    doc.add("center", f"[PER: {judges[0]}, JUDICIAL MEMBER]")
    doc.running = rng.choice((f"Appeal No. {case}", f"AT {case}" if case[0].isdigit() else case,
                              "", f"{appellant} v. {respondent}"[:60]))  # fmt: skip
    pages = _target_pages(rng) + rng.randint(0, 3)
    impugned = date_text(day - dt.timedelta(days=rng.randint(200, 700)), dated)
    person = appellant.split()[0] in ("Mr.", "Mrs.", "Ms.", "Shri", "Smt.")
    by = "allottee" if person else "promoter"
    doc.num(f"This appeal is preferred under {c.section(44)} by the {by} challenging the order "
            f"dated {impugned} passed by the {state.abbr} in Complaint No. {below}.")  # fmt: skip
    doc.num(f"The appellant has complied with the proviso to {c.section(43, sub=True)} by "
            f"depositing the amount directed with the Tribunal.")  # fmt: skip
    doc.num(rng.choice(("The points for determination and our findings thereon are as under:",
                        "The following points arise for our determination:")))  # fmt: skip
    doc.add("item", "(i)", f"Whether the impugned order suffers from any error in applying "
                           f"{c.section(18)}? ... "
                           f"{rng.choice(('Negative', 'Affirmative'))}")  # fmt: skip
    doc.add("item", "(ii)", "Whether the appellant is entitled to any relief? ... As per order")
    _filler_paragraphs(doc, rng, c, ctx, int(pages * rng.randint(2400, 3300) - 2200))
    doc.add("gap", 8)
    doc.add("center", rng.choice(("ORDER", "O R D E R", "FINAL ORDER")), True)
    costs = rng.choice(("No order as to costs.", "Parties to bear their own costs."))
    if change:
        costs = "The appellant shall pay costs of Rs. 25,000/- to the respondent."
    for n, text in enumerate((f"Appeal No. {case} is {rng.choice(('dismissed', 'partly allowed', 'allowed'))}.",  # noqa: E501
                              f"The impugned order dated {impugned} "
                              f"is {rng.choice(('confirmed', 'modified to the extent above', 'set aside'))}.",  # noqa: E501
                              costs)):  # fmt: skip
        doc.add("item", rng.choice(("({})", "{})", "{}.")).format("abcd"[n]), text)
    _signature(doc, rng, f"{judges[0]}\nJUDICIAL MEMBER", state, date_line if rng.random() < 0.3
               else None, day, dated, tribunal=True)  # fmt: skip
    title = (f"{appellant} v. {respondent} (Appeal No. {case}, {state.name} Real Estate "
             "Appellate Tribunal)")  # fmt: skip
    return doc, {"case": case, "c": c, "date_line": printed, "title": title, "costs": costs}


_SUBJECTS = (
    ("Extension of registration of real estate projects on account of COVID-19", 6, 5),
    ("Uploading of quarterly progress reports by promoters", 11, 13),
    ("Maintenance of separate bank account for each project", 4, 5),
    ("Registration of real estate agents and renewal thereof", 9, 10),
    ("Disclosure of sanctioned plans on the website of the Authority", 11, 16),
    ("Filing of complaints through the online portal", 31, 6),
    ("Annual audit of project accounts by a chartered accountant", 4, 5),
)


def _circular(
    rng: random.Random, state: State, day: dt.date, change: bool
) -> tuple[Doc, dict[str, Any]]:
    doc, c = Doc(), _Cites(rng, state)
    number = f"{rng.randint(1, 40)}/{day.year}"
    subject, section, rule = rng.choice(_SUBJECTS)
    own = date_text(day, rng.randrange(6))
    doc.add("center", f"{state.name.upper()} REAL ESTATE REGULATORY AUTHORITY", True)
    doc.add("center", rng.choice((f"{state.capital}", f"{rng.randint(1, 9)}th Floor, "
                                  f"Udyog Bhavan, {state.capital}")))  # fmt: skip
    doc.add("gap", 10)
    if rng.random() < 0.5:
        doc.add("left", f"Circular No. {number}")
        doc.add("right", printed := f"Date: {own}")
    else:
        doc.add("center", f"CIRCULAR No. {number}", True)
        doc.add("left", printed := f"Dated: {own}")
    doc.add("gap", 6)
    doc.add("left", f"Subject: {subject}.", True)
    if rng.random() < 0.5:
        doc.add("left", f"Reference: {c.section(section)}; {c.rule(rule)}.")
    doc.add("para", f"In exercise of the powers conferred under {c.section(37)}, the "
            f"{state.name} Real Estate Regulatory Authority hereby issues the following "
            f"directions to all promoters and real estate agents, namely:-")  # fmt: skip
    days = "thirty days" if not change else "fifteen days"
    points = [
        lambda: f"Every promoter shall comply with {c.section(section)} and {c.rule(rule)} "
        f"within {days} from the date of this circular.",
        lambda: f"The information shall be uploaded in the format prescribed in {c.rule()} on "
        f"the website of the Authority.",
        lambda: f"Non-compliance shall attract penalty under "
        f"{c.section(rng.choice((60, 61, 63)))}.",
        lambda: "The promoters whose projects are registered before the date of this circular "
        "shall also comply with these directions.",
        lambda: f"The real estate agents shall not facilitate the sale of any unit in a project "
        f"not registered under {c.section(3)}.",
        lambda: f"The chartered accountant's certificate referred to in {c.section(4, sub=True)} "
        f"shall be uploaded along with the quarterly update.",
        lambda: "Where the promoter has already applied, the application shall be processed "
        "without any further fee.",
        lambda: "The Authority may, for reasons to be recorded in writing, relax any of these "
        "directions in a particular case.",
        lambda: f"Any allottee aggrieved may file a complaint under {c.section(31)} in the form "
        f"prescribed in {c.rule(rng.choice((6, 13)))}.",
    ]  # fmt: skip
    for make in [points[0], *rng.sample(points[1:], rng.randint(2, 8))]:
        doc.num(make())
    doc.num("This circular shall come into force with immediate effect.")
    _signature(doc, rng, f"({rng.choice(_FIRST)} {rng.choice(_LAST)})\nSecretary, {state.abbr}",
               state, None, day, 0)  # fmt: skip
    return doc, {"case": f"Circular No. {number}", "c": c, "days": days, "date_line": printed,
                 "title": f"{state.abbr} Circular No. {number}: {subject}"}  # fmt: skip


_INSTRUCTIONS = (
    ("3", "(2)", "thirty days", "sixty days"), ("4", "(1)", "seven days", "fifteen days"),
    ("5", "(1)", "seventy per cent", "sixty per cent"), ("6", "(2)", "one year", "two years"),
    ("10", "(1)", "ten thousand rupees", "twenty-five thousand rupees"),
    ("13", "(3)", "five years", "ten years"), ("18", "", "two per cent", "three per cent"),
)  # fmt: skip


def _amendment(
    rng: random.Random, state: State, day: dt.date, change: bool
) -> tuple[Doc, dict[str, Any]]:
    doc, c = Doc(), _Cites(rng, state)
    base = state.rules_title.rsplit(",", 1)[0]
    ordinal = rng.choice(("", "", "(Second Amendment) ", "(Third Amendment) "))
    title = f"{base} {ordinal or '(Amendment) '}Rules, {day.year}"
    doc.add("center", f"GOVERNMENT OF {state.name.upper()}", True)
    doc.add("center", state.department.upper() if rng.random() < 0.5 else state.department)
    doc.add("center", "NOTIFICATION", True)
    printed = f"{state.capital}, the {_ordinal(day.day)} {_MONTHS[day.month - 1]}, {day.year}"
    doc.add("left", printed)
    number = f"No. {rng.choice(('GH/V/', 'RERA-', 'UDD/'))}{rng.randint(10, 300)}/{day.year}"
    doc.add("para", f"{number}.\u2014 In exercise of the powers conferred by {c.section(84)} "
            f"(16 of 2016), the Government of {state.name} hereby makes the following rules "
            f"further to amend the {state.rules_title}, namely:-")  # fmt: skip
    doc.num(f"Short title and commencement.\u2014 (1) These rules may be called the {title}.")
    doc.add("para", "(2) They shall come into force on the date of their publication in the "
            "Official Gazette.")  # fmt: skip
    chosen = rng.sample(_INSTRUCTIONS, rng.randint(1, 3))
    if change:
        chosen = chosen[:1] + [("21", "(1)", "fifteen days", "thirty days")]
    for n, (rule, sub, old, new) in enumerate(chosen):
        c.rules.append(rule)
        said = (f"In the {state.rules_title} (hereinafter referred to as the said rules)"
                if n == 0 else "In the said rules")  # fmt: skip
        place = f"in rule {rule}, in sub-rule {sub}," if sub else f"in rule {rule},"
        doc.num(f"{said}, {place} for the words \u201c{old}\u201d the words \u201c{new}\u201d "
                "shall be substituted.")  # fmt: skip
    doc.add("gap", 10)
    doc.add("right", f"By order and in the name of the Governor of {state.name},")
    _signature(doc, rng, f"{rng.choice(_FIRST).upper()} {rng.choice(_LAST).upper()}\n"
               f"{rng.choice(('Deputy Secretary', 'Under Secretary', 'Principal Secretary'))}"
               " to the Government", state, None, day, 0)  # fmt: skip
    return doc, {"case": number, "c": c, "title": title, "amends": state.rules_title,
                 "date_line": printed}  # fmt: skip


def _signature(doc: Doc, rng: random.Random, signer: str, state: State, date_line: str | None,
               day: dt.date, form: int, tribunal: bool = False) -> None:  # fmt: skip
    """The foot of a document: the signer's name and office at the right, place and date."""
    doc.add("gap", rng.choice((12, 18, 24)))
    if rng.random() < 0.4:
        doc.add("right", "Sd/-")
    for line in signer.split("\n"):
        doc.add("right", line.strip(), rng.random() < 0.3)
    if not tribunal and "Secretary" not in signer and rng.random() < 0.5:
        doc.add("right", f"{state.name} Real Estate Regulatory Authority")
    if date_line is not None:  # the document's date printed only at its foot
        doc.add("left", f"Place: {state.capital}")
        doc.add("left", date_line)


_MAKERS = {"order": _order, "appeal": _appeal, "circular": _circular, "amendment": _amendment}


def _variety(rng: random.Random) -> str:
    roll, total = rng.random(), 0.0
    for name, share in MIX:
        total += share
        if roll < total:
            return name
    return MIX[0][0]


def document_rng(seed: int, index: int) -> random.Random:
    """The RNG of document ``index``: the same document whatever the jurisdiction."""
    return random.Random(f"civicsetu-generated-state:{seed}:{index}")


def make_document(
    out_dir: Path | str, *, jurisdiction: str, index: int, seed: int,
    rules_title: str | None = None, changed: bool = False,
) -> GeneratedDocument:  # fmt: skip
    """Write document ``index`` of the state generated with ``seed`` into ``out_dir``.

    The same ``seed`` and ``index`` give the same document (its parties, paragraphs, layout and
    date) in any jurisdiction, with that jurisdiction's names; ``changed`` gives its corrected
    version (one figure of the operative part, or one instruction, is different)."""
    state = state_of(jurisdiction, rules_title)
    rng = document_rng(seed, index)
    variety = _variety(rng)
    day = dt.date(2018, 1, 1) + dt.timedelta(days=rng.randrange(8 * 365))
    while day.weekday() == 6:  # not pronounced on a Sunday
        day += dt.timedelta(days=1)
    style = Style.draw(rng)
    doc, meta = _MAKERS[variety](rng, state, day, changed)
    pages = layout(doc, style)
    key = f"{jurisdiction.lower()}_{variety}_{index:05d}" + ("_corrected" if changed else "")
    path = Path(out_dir) / f"{key}.pdf"
    write_pages(pages, style, path)
    cites: _Cites = meta["c"]
    return GeneratedDocument(
        path=path, key=key, kind=KIND_OF[variety], variety=variety, title=meta["title"],
        date=day, jurisdiction=jurisdiction, index=index, case_number=meta["case"],
        sections=tuple(dict.fromkeys(cites.sections)), rules=tuple(dict.fromkeys(cites.rules)),
        paragraphs=doc.paragraphs, pages=len(pages), date_line=meta["date_line"],
        date_at=meta.get("date_at", "head"), amends_title=meta.get("amends"),
        change=("corrected: " + _what_changed(variety)) if changed else None,
    )  # fmt: skip


def _what_changed(variety: str) -> str:
    return {"order": "the costs awarded in the operative order",
            "appeal": "the costs in the operative order",
            "circular": "the days allowed to comply",
            "amendment": "the second instruction"}[variety]  # fmt: skip


def changed_variant(document: GeneratedDocument, out_dir: Path | str, *, seed: int,
                    rules_title: str | None = None) -> GeneratedDocument:  # fmt: skip
    """The corrected version of ``document`` (same seed): the same pages but one figure of its
    operative part (an order's costs, a circular's days, an amendment's second instruction),
    written to ``out_dir`` under ``<key>_corrected.pdf``; deterministic."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    return make_document(out_dir, jurisdiction=document.jurisdiction, index=document.index,
                         seed=seed, rules_title=rules_title, changed=True)  # fmt: skip


def _make(args: tuple[str, str, int, int, str | None]) -> GeneratedDocument:
    out_dir, jurisdiction, index, seed, rules_title = args
    return make_document(out_dir, jurisdiction=jurisdiction, index=index, seed=seed,
                         rules_title=rules_title)  # fmt: skip


def write_state(out_dir: Path | str, *, jurisdiction: str, documents: int, seed: int,
                rules_title: str | None = None, processes: int | None = None,
                first: int = 0) -> list[GeneratedDocument]:  # fmt: skip
    """Write ``documents`` generated PDFs of ``jurisdiction`` (indexes ``first`` onwards) into
    ``out_dir``; seeded: the same arguments write the same files. ``processes`` (default: every
    core for more than 200 documents, else this process) share the work."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(str(out), jurisdiction, i, seed, rules_title) for i in range(first, first + documents)]
    workers = processes if processes is not None else ((os.cpu_count() or 1)
                                                       if documents > 200 else 1)  # fmt: skip
    if workers <= 1:
        return [_make(job) for job in jobs]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(_make, jobs, chunksize=16)


def registry_entry(
    document: GeneratedDocument, sha256: str, *, amends: Sequence[str] = ()
) -> dict[str, Any]:
    """The user registry entry ``civicsetu documents add`` writes for ``document`` with its kind,
    title and date given (the PDF stored as ``<sha256>.pdf``)."""
    entry: dict[str, Any] = {
        "key": document.key, "title": document.title, "jurisdiction": document.jurisdiction,
        "doc_type": document.kind, "effective_date": document.date.isoformat(),
        "source_url": document.path.resolve().as_uri(), "filename": f"{sha256}.pdf",
        "sha256": sha256, "language": "eng", "status": "in_force",
        "notes": f"generated (seeded) document {document.index} of a generated state",
    }  # fmt: skip
    if amends:
        entry["amends"] = list(amends)
    return entry
