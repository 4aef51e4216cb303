# Table 1's "date": a library function shows the current date.
import datetime

from _layout import page
from pyweb.html import P

today = datetime.date.today()
conn.return_(page("Today", P("Today is ", today.strftime("%A %d %B %Y"), ".")))
