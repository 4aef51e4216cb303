# Table 1's "date": a library function shows the current date.
import datetime

from pyweb.html import P

from _layout import page

today = datetime.date.today()
conn.return_(page("Today", P("Today is ", today.strftime("%A %d %B %Y"), ".")))
