# Table 1's "log": a 500-line HTML table with database content, built by a fold.
# SMLserver wrote these rows as quotations (guest.py shows that style); here they are Hop's
# node constructors, which escape every value too. Per row the two cost about the same
# (docs/html.md, "Short paths"): each TD is rendered as it is built, then its TR.
from pyweb import db
from pyweb.html import TABLE, TD, TH, TR

from _layout import page


def add_row(row, rows):
    rows.append(TR(TD(row["id"]), TD(row["page"]), TD(row["status"]), TD(row["bytes"])))
    return rows


rows = await db.fold(add_row, [], "select id, page, status, bytes from log order by id")
conn.return_(page("Log", TABLE(TR(TH("id"), TH("page"), TH("status"), TH("bytes")), rows)))
