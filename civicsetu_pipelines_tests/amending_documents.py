"""A generated state's rules and the notification that amends them (issue 30), shared by the
amendment tests on text, on parsed PDFs and end to end through ``documents add``."""

from __future__ import annotations

import datetime as dt

RULES_TITLE = "Mizoram Real Estate (Regulation and Development) Rules, 2018"
RULES = [
    ("Short title and commencement", ["These rules may be called the Mizoram Real Estate "
     "(Regulation and Development) Rules, 2018."]),
    ("Definitions", ["In these rules, unless the context otherwise requires, the Act means the "
     "Real Estate (Regulation and Development) Act, 2016."]),
    ("Fee for registration", ["(1) The application shall be made in Form A.",
     "(2) The promoter shall pay a fee of ten rupees per square meter."]),
    ("Books of account", ["The promoter shall keep the books of account of the project at its "
     "registered office."]),
    ("Display of the registration", ["The promoter shall display the registration number at "
     "the site of the project."]),
    ("Duties of real estate agents", ["(1) A real estate agent shall,-", "(a) keep books;",
     "(b) file returns;", "(c) display his registration number in every advertisement.",
     "(2) A real estate agent shall not mislead an allottee.",
     "(3) A real estate agent shall help the allottee at the time of booking."]),
    ("Timelines for refund", ["Any refund of monies payable by the promoter shall be payable "
     "to the allottee within forty-five days from the date on which it becomes due."]),
    ("Interest payable by promoter and allottee", ["(1) Interest is payable under sections 12, "
     "18 and 19 of the Act.", "(2) The rate of interest shall be the State Bank of India "
     "highest marginal cost of lending rate plus two per cent.",
     "(3) The interest shall be paid within the time the refund is due."]),
]  # fmt: skip
AMENDMENT_TITLE = "Mizoram Real Estate (Regulation and Development) (Amendment) Rules, 2024"
AMENDMENT = [
    "GOVERNMENT OF MIZORAM",
    "URBAN DEVELOPMENT AND POVERTY ALLEVIATION DEPARTMENT",
    "NOTIFICATION",
    "The Governor of Mizoram hereby makes the following rules further to amend the Mizoram Real "
    "Estate (Regulation and Development) Rules, 2018, namely:-",
    f"1. Short title and commencement.- (1) These rules may be called the {AMENDMENT_TITLE}.",
    "(2) They shall come into force on the 1st day of April, 2024.",
    "2. In rule 7 of the Mizoram Real Estate (Regulation and Development) Rules, 2018 "
    "(hereinafter referred to as the said rules), for the words \u201cforty-five days\u201d, "
    "the words \u201cthirty days\u201d shall be substituted.",
    "3. In rule 8 of the said rules, for sub-rule (2), the following sub-rule shall be "
    "substituted, namely:-",
    "\u201c(2) The rate of interest shall be the State Bank of India highest marginal cost of "
    "lending rate plus three per cent.\u201d.",
    "4. After rule 4 of the said rules, the following rule shall be inserted, namely:-",
    "\u201c4A. Quarterly progress report.- The promoter shall upload a quarterly progress report "
    "of the project on the website of the Authority.\u201d.",
    "5. Rule 5 of the said rules shall be omitted.",
    "6. In rule 6 of the said rules,-",
    "(a) in sub-rule (1), clause (c) shall be omitted;",
    "(b) sub-rule (3) shall be renumbered as sub-rule (4).",
]
MISSING = "7. In rule 40 of the said rules, sub-rule (2) shall be omitted."
APRIL = dt.date(2024, 4, 1)


def rules_pages() -> list[list[str]]:
    rows = ["GOVERNMENT OF MIZORAM", "NOTIFICATION",
            "The Governor of Mizoram makes the following rules, namely:-"]  # fmt: skip
    for n, (title, paragraphs) in enumerate(RULES, 1):
        rows += [f"{n}. {title}.\u2014 {paragraphs[0]}", *paragraphs[1:]]
    return [rows]


def dated_rules_pages() -> list[list[str]]:
    """The rules as a gazette prints them, with the place and date of the notification and its
    number: identified from their own words (kind, title, date), no flag needed."""
    (rows,) = rules_pages()
    return [[*rows[:2], "Aizawl, the 1st May, 2018",
             "No. B.13015/1/2017-UDPA.\u2014 In exercise of the powers conferred by section 84 of "
             "the Real Estate (Regulation and Development) Act, 2016, the Governor of Mizoram "
             "makes the following rules, namely:-", *rows[3:]]]  # fmt: skip


# A state government order (G.O.) amending those rules by one instruction in no numbered
# paragraph, framed as departments print it (issue 35)
ORDER_DATE = dt.date(2019, 1, 28)
GO = [
    "GOVERNMENT OF MIZORAM",
    "ABSTRACT",
    "Real Estate (Regulation and Development) Act, 2016 - Mizoram Real Estate (Regulation and "
    "Development) Rules, 2018 - Amendment - Notification - Orders - Issued.",
    "URBAN DEVELOPMENT AND POVERTY ALLEVIATION DEPARTMENT",
    "G.O.Ms.No. 21                                        Dated: 28-01-2019",
    "Read the following:",
    "1. G.O.Ms.No. 107, UD&PA Department, dated 27-03-2018.",
    "2. From the Chairperson, Mizoram RERA, Lr.No. 123/2018, dated 12-11-2018.",
    "ORDER:",
    "The following notification shall be published in an Extraordinary issue of the Mizoram "
    "Gazette.",
    "NOTIFICATION",
    "In exercise of the powers conferred by section 84 of the Real Estate (Regulation and "
    "Development) Act, 2016, the Government of Mizoram hereby makes the following amendment to "
    f"the {RULES_TITLE} (hereinafter referred to as the said rules).",
    "AMENDMENT",
    "In sub-rule (2) of rule 3 of the said rules, for the word \u201cten\u201d the word "
    "\u201ctwenty\u201d shall be substituted.",
    "(BY ORDER AND IN THE NAME OF THE GOVERNOR OF MIZORAM)",
    "R. LALRINTLUANGA",
    "PRINCIPAL SECRETARY TO GOVERNMENT",
    "To",
    "The Commissioner of Printing, Aizawl.",
    "Copy to:",
    "1. The Chairperson, Mizoram RERA.",
    "2. All Heads of Departments.",
]
