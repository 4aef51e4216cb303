# SMLserver §4's guest book: Db.foldr formats each row of the guest table, newest last, and
# a form posts a new entry to guest_add. Every value from the database is an antiquote of
# a quotation, so it is HTML-escaped: a comment "<script>..." shows as text. The form is
# declared once in _guest_form.py; it carries the CSRF field (a POST form in a request).
from pyweb import db, qq

from _guest_form import entry_form
from _layout import page


def layout_row(row, acc):
    return (
        qq(
            '<li><i>{comment}</i> -- <a href="mailto:{email}">{name}</a></li>\n',
            comment=row["comment"],
            email=row["email"],
            name=row["name"],
        )
        + acc
    )


entries = await db.foldr(layout_row, qq(""), "select email, name, comment from guest order by id")
form = entry_form()

conn.return_(page("Guest Book", qq("<ul>\n{entries}</ul>\n<h2>New comment</h2>\n{form}")))
