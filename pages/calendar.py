# Table 1's "calendar": 13 formatted calendar months, from this month on.
# (This script is not importable, so it does not hide the standard calendar module.)
import calendar
import datetime

from pyweb import safe
from pyweb.html import DIV

from _layout import page

today = datetime.date.today()
formatter = calendar.HTMLCalendar(firstweekday=calendar.MONDAY)
months = []
year, month = today.year, today.month
for _ in range(13):
    # HTMLCalendar writes its own (trusted) markup: mark it safe so it is not escaped.
    months.append(DIV(safe(formatter.formatmonth(year, month)), class_="month"))
    year, month = (year + 1, 1) if month == 12 else (year, month + 1)
conn.return_(page("Calendar", DIV(months, class_="calendar")))
