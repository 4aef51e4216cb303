# SMLserver §4's guest book: Db.foldr formats each row of the guest table, newest last, and
# a form posts a new entry to guest_add. Every value from the database is an antiquote of
# a quotation, so it is HTML-escaped: a comment "<script>..." shows as text.
from pyweb import csrf_field, db, qq

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


token = csrf_field()  # the hidden field every POST form carries (CSRF protection)
entries = await db.foldr(layout_row, qq(""), "select email, name, comment from guest order by id")

conn.return_(
    page(
        "Guest Book",
        qq("""<ul>
{entries}</ul>
<h2>New comment</h2>
<form action="/guest_add" method="post">{token}
<p><label>Name <input name="name" maxlength="100"></label>
<label>E-mail <input name="email" type="email" maxlength="100"></label></p>
<p><label>Comment<br><textarea name="comment" rows="3" cols="60" maxlength="2000"></textarea></label></p>
<p><input type="submit" value="Add"></p>
</form>"""),
    )
)
