# Table 1's "mul": a multiplication table, written with quotations (SMLserver §2.2).
# /mul?n=12 gives a 12 x 12 table; n is a natural number up to 30, default 10.
from pyweb import qq
from pyweb.forms import get_nat, wrap_opt

from _layout import page

n = wrap_opt(get_nat)("n", max=30)
if n is None:
    n = 10

rows = qq("")
for i in range(1, n + 1):
    cells = qq("").join(qq("<td>{p}</td>", p=i * j) for j in range(1, n + 1))
    rows = rows + qq("<tr><th>{i}</th>{cells}</tr>\n")
header = qq("").join(qq("<th>{j}</th>", j=j) for j in range(1, n + 1))

table = qq("""<table class="mul"><tr><th>&times;</th>{header}</tr>
{rows}</table>""")
conn.return_(page(f"{n} × {n}", table))
