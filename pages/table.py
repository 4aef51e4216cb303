# Table 1's "table": a 500-line HTML table, built with HTML node constructors (Hop §2.1).
from pyweb.html import TABLE, TD, TH, TR

from _layout import page

rows = [TR(TD(i), TD(i * i), TD(f"row {i} <of 500>")) for i in range(1, 501)]
conn.return_(page("Table", TABLE(TR(TH("i"), TH("i²"), TH("text")), rows)))
