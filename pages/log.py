# Table 1's "log": a 500-line HTML table with database content, built by a fold.
from pyweb import db
from pyweb.html import TABLE, TD, TH, TR

from _layout import page


def add_row(row, rows):
    rows.append(TR(TD(row["id"]), TD(row["page"]), TD(row["status"]), TD(row["bytes"])))
    return rows


rows = await db.fold(add_row, [], "select id, page, status, bytes from log order by id")
conn.return_(page("Log", TABLE(TR(TH("id"), TH("page"), TH("status"), TH("bytes")), rows)))
