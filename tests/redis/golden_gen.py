"""golden_gen.py - command sequences for the differential test against RedisBloom.

generate(seed) returns a list of scenarios; each scenario is a list of
steps, a step being a list of arguments (str or bytes) sent as one command,
or a macro the recorder expands into real commands (scripts/record-goldens.py):

    ["@dumpload", "bf"|"cf", src, dst]  SCANDUMP src from 0 to the end, each
                                        chunk then LOADCHUNK dst (both recorded)
    ["@stats"]                          INFO commandstats, BF/CF lines without
                                        timings (calls, rejected, failed)
    ["@proto", "2"|"3"]                 HELLO 2/3 (its reply names the server:
                                        not compared)

Every scenario starts with FLUSHALL and CONFIG RESETSTAT.  Keys: b*/c* hold
filters, "str" a string (wrong type: a documented deviation), "miss" never
exists.  Sizes stay small so that the recorded replies stay small.

Never generated: commands that crash RedisBloom (CF.RESERVE with an option
keyword as the last argument) and filters of hundreds of megabytes.
"""
import random

BF_CMDS = ["bf.reserve", "bf.add", "bf.madd", "bf.insert", "bf.exists", "bf.mexists",
           "bf.card", "bf.info", "bf.debug", "bf.scandump", "bf.loadchunk"]
CF_CMDS = ["cf.reserve", "cf.add", "cf.addnx", "cf.insert", "cf.insertnx", "cf.exists",
           "cf.mexists", "cf.count", "cf.del", "cf.compact", "cf.info", "cf.debug",
           "cf.scandump", "cf.loadchunk"]

INTS = ["1", "2", "3", "4", "7", "10", "16", "50", "100", "128", "255", "256", "1000",
        "0", "-1", "-0", "04", "+5", "1e2", "5.0", "x", "", " 5", "5 ", "32768", "32769",
        "65535", "65536", "1073741825", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "0x10", "2147483648", "4294967297"]
SMALL_INTS = ["1", "2", "3", "4", "7", "10", "16", "50", "100"]
DOUBLES = ["0.01", "0.001", "0.1", "0.05", "0.25", "0.2500001", "0.3", "0.5", "0.9", "0.99",
           "1", "0", "-0.1", "inf", "-inf", "nan", "1e-3", ".5", "5.", "1e-320", "1e-400",
           "1e400", "x", "", "0x10", " 0.1", "0.1 ", "1e-30", "0.0001", "1.5", "+0.1",
           "-0", "0.1x", "1e-10"]
GOOD_RATES = ["0.01", "0.001", "0.1", "0.05", "0.25", "0.2500001", "0.5", "0.9", "1e-3",
              ".5", "0.3", "1e-5"]
ITEMS = ["a", "b", "c", "item1", "item2", "foo", "bar", "", "x" * 40, "\x00\x01\xff",
         "hello world", "0", "-1", "ITEMS", "CAPACITY", "NOCREATE", "\xe9t\xe9"]
BF_INSERT_TOKENS = ["CAPACITY", "ERROR", "EXPANSION", "NOCREATE", "NONSCALING", "ITEMS",
                    "capacity", "Error", "expansion", "nocreate", "nonscaling", "items",
                    "CAP", "C", "ERR", "E", "EXP", "EX", "NOC", "NON", "N", "NO", "I", "IT",
                    "CAPACITYX", "ERRORS", "ITEMSX", "FOO", "X", "", "ZZ", "nx", "e1"]
CF_INSERT_TOKENS = ["CAPACITY", "NOCREATE", "ITEMS", "capacity", "nocreate", "items", "CAP",
                    "C", "NOC", "N", "NO", "I", "IT", "ITEMSX", "CAPACITYX", "FOO", "X", "",
                    "ERROR", "EXPANSION", "NONSCALING", "NX"]
CF_RESERVE_TOKENS = ["BUCKETSIZE", "MAXITERATIONS", "EXPANSION", "bucketsize",
                     "maxiterations", "expansion", "B", "BUCKET", "M", "MAX", "E", "EXP",
                     "X", "FOO", "", "BUCKETSIZEX", "MAXITERATIONSX", "EXPANSIONX"]
BF_RESERVE_TOKENS = ["EXPANSION", "NONSCALING", "expansion", "nonscaling", "EXP", "E", "N",
                     "NON", "EXPANSIONS", "NONSCALINGX", "X", "FOO", ""]
INFO_FIELDS = ["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION", "capacity", "size",
               "filters", "items", "expansion", "CAP", "C", "S", "F", "I", "E", "EXP",
               "CAPACITYX", "SIZES", "FOO", "", "ITEM", "FILTER"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.items_made = 0

    def pick(self, xs):
        return self.r.choice(xs)

    def chance(self, p):
        return self.r.random() < p

    def item(self):
        if self.chance(0.6):
            return self.pick(ITEMS)
        self.items_made += 1
        return "i%d" % self.r.randrange(400)

    def items(self, lo=1, hi=6):
        return [self.item() for _ in range(self.r.randint(lo, hi))]

    def bkey(self):
        return self.pick(["b0", "b1", "b2", "b0", "b1", "str", "bmiss"])

    def ckey(self):
        return self.pick(["c0", "c1", "c2", "c0", "c1", "str", "cmiss"])

    def rate(self):
        return self.pick(GOOD_RATES if self.chance(0.75) else DOUBLES)

    def cap(self):
        return self.pick(SMALL_INTS if self.chance(0.75) else INTS)

    def value_for(self, tok):
        t = tok.upper()
        if t.startswith("ER"):
            return self.rate()
        if t.startswith("C") or t.startswith("B") or t.startswith("M"):
            return self.cap()
        if t.startswith("E"):
            return self.pick(["0", "1", "2", "3", "4", "8", "x", "-1", "32769", "04"])
        return self.pick(SMALL_INTS)

    def options(self, tokens, nmax, with_values=True):
        out = []
        for _ in range(self.r.randint(0, nmax)):
            t = self.pick(tokens)
            if self.chance(0.3):
                t = t.lower() if self.chance(0.5) else t.capitalize()
            out.append(t)
            if with_values and self.chance(0.85):
                out.append(self.value_for(t))
        return out

    # ---- one random command ------------------------------------------------
    def bf_command(self):
        c = self.pick(BF_CMDS)
        k = self.bkey()
        if c == "bf.reserve":
            a = [c, k, self.rate(), self.cap()] + self.options(BF_RESERVE_TOKENS, 3)
        elif c == "bf.add":
            a = [c, k, self.item()]
        elif c in ("bf.madd", "bf.mexists"):
            a = [c, k] + self.items(1, 8)
        elif c == "bf.insert":
            opts = self.options(BF_INSERT_TOKENS, 4)
            if self.chance(0.9):
                opts += ["ITEMS" if self.chance(0.8) else self.pick(["items", "I", "IT"])]
            a = [c, k] + opts + self.items(0 if self.chance(0.1) else 1, 8)
        elif c == "bf.exists":
            a = [c, k, self.item()]
        elif c in ("bf.card", "bf.debug"):
            a = [c, k]
        elif c == "bf.info":
            a = [c, k] + ([self.pick(INFO_FIELDS)] if self.chance(0.6) else [])
        elif c == "bf.scandump":
            a = [c, k, self.pick(["0", "1", "-1", "x", "2", "100", "999999", "01", "", "-5"])]
        else:
            a = [c, k, self.pick(["1", "0", "2", "-1", "x", "9"]),
                 self.pick(["", "\x00" * 8, "garbage", "\x01" * 60])]
        return self.mutate(a)

    def cf_command(self):
        c = self.pick(CF_CMDS)
        k = self.ckey()
        if c == "cf.reserve":
            opts = self.options(CF_RESERVE_TOKENS, 3)
            # RedisBloom reads past its arguments (and may crash) on an
            # option keyword as the last argument: never generated.
            if len(opts) % 2 == 1:
                opts.append(self.pick(SMALL_INTS))
            if opts and opts[-1].upper() in ("BUCKETSIZE", "MAXITERATIONS", "EXPANSION"):
                opts += [self.pick(SMALL_INTS), "x"]
            a = [c, k, self.pick(["2", "4", "8", "10", "64", "100", "1000"]
                                 if self.chance(0.8) else INTS)] + opts
            return a
        if c in ("cf.add", "cf.addnx", "cf.exists", "cf.count", "cf.del"):
            a = [c, k, self.item()]
        elif c == "cf.mexists":
            a = [c, k] + self.items(1, 8)
        elif c in ("cf.insert", "cf.insertnx"):
            opts = self.options(CF_INSERT_TOKENS, 3)
            if self.chance(0.9):
                opts += ["ITEMS" if self.chance(0.8) else self.pick(["items", "I", "IT"])]
            a = [c, k] + opts + self.items(0 if self.chance(0.1) else 1, 8)
        elif c in ("cf.compact", "cf.info", "cf.debug"):
            a = [c, k]
        elif c == "cf.scandump":
            a = [c, k, self.pick(["0", "1", "-1", "x", "2", "100", "999999", "01", ""])]
        else:
            a = [c, k, self.pick(["1", "0", "2", "-1", "x", "9"]),
                 self.pick(["", "\x00" * 38, "garbage", "\x01" * 60])]
        return self.mutate(a)

    def mutate(self, a):
        """Sometimes a wrong arity: an argument dropped or one added."""
        if self.chance(0.06) and len(a) > 1:
            return a[:self.r.randint(1, len(a) - 1)]
        if self.chance(0.04):
            return a + [self.item()]
        return a

    # ---- scenarios -------------------------------------------------------------
    def random_mix(self, n, family):
        steps = [["set", "str", "v"]]
        for _ in range(n):
            f = family or self.pick(["bf", "cf"])
            steps.append(self.bf_command() if f == "bf" else self.cf_command())
            if self.chance(0.05):
                src = self.bkey() if f == "bf" else self.ckey()
                steps.append(["@dumpload", f, src, f[0] + "9"])
        steps.append(["@stats"])
        return steps


def head():
    return [["flushall"], ["config", "resetstat"]]


def metadata():
    """COMMAND INFO / DOCS / GETKEYS of every command, one at a time."""
    s = head()
    for c in BF_CMDS + CF_CMDS:
        s.append(["command", "info", c])
        s.append(["command", "docs", c])
    s.append(["command", "info"] + [c.upper() for c in BF_CMDS])
    s.append(["command", "getkeys", "bf.add", "k", "a"])
    s.append(["command", "getkeys", "cf.insert", "k", "ITEMS", "a", "b"])
    return [s]


def arity():
    """Every command with 0..n+2 arguments on a missing and an existing key."""
    s = head() + [["bf.add", "b0", "a"], ["cf.add", "c0", "a"]]
    for c in BF_CMDS + CF_CMDS:
        k = "b0" if c.startswith("bf") else "c0"
        for n in range(0, 6):
            if c == "cf.reserve" and n in (3, 5):
                continue  # an option keyword last crashes RedisBloom
            args = [c] + ([k] if n else []) + ["1"] * max(n - 1, 0)
            s.append(args)
        s.append([c.upper(), "miss"])
    s.append(["@stats"])
    return [s]


def bf_values():
    """BF.RESERVE / BF.INSERT over the value grid: sizing and errors."""
    out = []
    s = head()
    i = 0
    for rate in DOUBLES + ["1e-100", "0.000001", "0.2", "0.26", "0.7"]:
        for cap in ["1", "7", "100", "0100", "0", "-3", "1e2", "1073741825"]:
            k = "v%d" % i
            i += 1
            s.append(["bf.reserve", k, rate, cap])
            s.append(["bf.debug", k])
        if len(s) > 300:
            out.append(s)
            s = head()
    for exp in ["0", "1", "2", "3", "4", "7", "8", "32768", "32769", "-1", "x", "04", ""]:
        for tail in ([], ["NONSCALING"]):
            k = "e%d" % i
            i += 1
            s.append(["bf.reserve", k, "0.01", "5", "EXPANSION", exp] + tail)
            s.append(["bf.reserve", k + "n", "0.01", "5"] + tail + ["EXPANSION", exp])
            s.append(["bf.madd", k] + ["m%d" % j for j in range(30)])
            s.append(["bf.info", k])
            s.append(["bf.debug", k])
    out.append(s)
    s = head()
    for rate in ["0.5", "0.9", "0.25", "0.3", "2", "0", "inf", "nan", "x", "1e-320"]:
        for opt in (["CAPACITY", "10"], ["CAP", "10"], ["EXPANSION", "1"], ["NONSCALING"]):
            k = "n%d" % i
            i += 1
            s.append(["bf.insert", k, "ERROR", rate] + opt + ["ITEMS", "a", "b", "c"])
            s.append(["bf.debug", k])
            s.append(["bf.info", k])
    out.append(s)
    return out


def bf_growth():
    s = head()
    for exp in ["1", "2", "4", "0"]:
        for cap in ["1", "4", "10"]:
            k = "g%s_%s" % (exp, cap)
            s.append(["bf.reserve", k, "0.01", cap, "EXPANSION", exp])
            for j in range(0, 100, 25):
                s.append(["bf.madd", k] + ["x%d" % n for n in range(j, j + 25)])
            s.append(["bf.debug", k])
            s.append(["bf.info", k])
            s.append(["bf.card", k])
            s.append(["bf.mexists", k] + ["x%d" % n for n in range(0, 120, 7)])
    # non-scaling full: the error element ends the array
    s.append(["bf.reserve", "full", "0.01", "3", "NONSCALING"])
    s.append(["bf.madd", "full"] + ["f%d" % n for n in range(10)])
    s.append(["bf.add", "full", "zz"])
    s.append(["bf.insert", "full", "ITEMS"] + ["q%d" % n for n in range(5)])
    s.append(["bf.info", "full"])
    # expansion 1 grows by one each time: many links
    s.append(["bf.insert", "one", "CAPACITY", "1", "EXPANSION", "1", "ITEMS"] +
             ["o%d" % n for n in range(60)])
    s.append(["bf.debug", "one"])
    # the halved error rate underflows after 1072 links: every later new
    # item fails alone ("problem inserting"), the command goes on
    s.append(["bf.reserve", "under", "0.5", "1", "EXPANSION", "1"])
    s.append(["bf.madd", "under"] + [str(n) for n in range(1200)])
    s.append(["bf.info", "under"])
    s.append(["bf.add", "under", "new1"])
    s.append(["bf.insert", "under", "ITEMS", "new1", "new2", "new3"])
    s.append(["bf.reserve", "tiny", "1e-300", "1", "EXPANSION", "1"])
    s.append(["bf.madd", "tiny"] + ["t%d" % n for n in range(120)])
    s.append(["bf.info", "tiny"])
    s.append(["@dumpload", "bf", "one", "one2"])
    s.append(["bf.debug", "one2"])
    s.append(["bf.mexists", "one2"] + ["o%d" % n for n in range(0, 80, 3)])
    s.append(["bf.add", "one2", "new"])
    s.append(["@stats"])
    return [s]


def cf_values():
    s = head()
    i = 0
    for cap in ["1", "2", "3", "4", "5", "100", "1000", "0100", "0", "-4", "x", "1073741825",
                "1e3"]:
        for opts in ([], ["BUCKETSIZE", "1"], ["BUCKETSIZE", "4"], ["BUCKETSIZE", "255"],
                     ["BUCKETSIZE", "256"], ["BUCKETSIZE", "0"], ["MAXITERATIONS", "0"],
                     ["MAXITERATIONS", "65535"], ["MAXITERATIONS", "65536"],
                     ["EXPANSION", "0"], ["EXPANSION", "3"], ["EXPANSION", "32768"],
                     ["EXPANSION", "32769"], ["EXPANSION", "-1"], ["BUCKETSIZE", "x"],
                     ["FOO", "1"], ["B", "4"], ["MAX", "5"], ["EXP", "2"]):
            k = "c%d" % i
            i += 1
            s.append(["cf.reserve", k, cap] + opts)
            s.append(["cf.debug", k])
    return [s[:len(s) // 2], head() + s[len(s) // 2:]]


def cf_growth():
    out = []
    s = head()
    for bs in ["1", "2", "4"]:
        for exp in ["0", "1", "2", "4"]:
            k = "g%s_%s" % (bs, exp)
            s.append(["cf.reserve", k, "8", "BUCKETSIZE", bs, "EXPANSION", exp])
            s.append(["cf.insert", k, "ITEMS"] + ["y%d" % n for n in range(80)])
            s.append(["cf.info", k])
            s.append(["cf.debug", k])
            s.append(["cf.mexists", k] + ["y%d" % n for n in range(0, 90, 9)])
    out.append(s)
    # the sub-filter limit: one command past it, and single adds
    s = head()
    s.append(["cf.reserve", "k", "4"])
    s.append(["cf.insert", "k", "ITEMS"] + ["i%d" % n for n in range(200)])
    s.append(["cf.info", "k"])
    s.append(["cf.add", "k", "more"])
    s.append(["cf.insertnx", "k", "ITEMS", "more2", "i3"])
    s.append(["cf.reserve", "one", "4"])
    for n in range(130):
        s.append(["cf.add", "one", "a%d" % n])
    s.append(["cf.info", "one"])
    s.append(["cf.reserve", "nx", "4"])
    for n in range(130):
        s.append(["cf.addnx", "nx", "a%d" % (n % 100)])
    s.append(["cf.debug", "nx"])
    # a chain over 32 sub-filters moved through SCANDUMP/LOADCHUNK
    s.append(["@dumpload", "cf", "k", "k2"])
    s.append(["cf.debug", "k2"])
    s.append(["cf.add", "k2", "after"])
    s.append(["cf.insert", "k2", "ITEMS", "z1", "z2"])
    s.append(["cf.mexists", "k2", "i0", "i199", "after", "z2", "none"])
    out.append(s)
    # deletes and compaction
    s = head()
    s.append(["cf.reserve", "d", "4", "BUCKETSIZE", "1"])
    s.append(["cf.insert", "d", "ITEMS"] + ["d%d" % n for n in range(40)])
    s.append(["cf.debug", "d"])
    for n in range(0, 40, 2):
        s.append(["cf.del", "d", "d%d" % n])
        if n % 8 == 0:
            s.append(["cf.debug", "d"])
    s.append(["cf.del", "d", "never"])
    s.append(["cf.compact", "d"])
    s.append(["cf.debug", "d"])
    s.append(["cf.count", "d", "d1"])
    s.append(["cf.add", "d", "d1"])
    s.append(["cf.count", "d", "d1"])
    s.append(["cf.mexists", "d"] + ["d%d" % n for n in range(40)])
    s.append(["@dumpload", "cf", "d", "d2"])
    s.append(["cf.info", "d2"])
    # full, non-expanding
    s.append(["cf.reserve", "full", "2", "BUCKETSIZE", "1", "EXPANSION", "0"])
    s.append(["cf.insert", "full", "ITEMS"] + ["f%d" % n for n in range(8)])
    s.append(["cf.add", "full", "g"])
    s.append(["cf.addnx", "full", "f0"])
    s.append(["cf.insertnx", "full", "ITEMS", "f0", "h"])
    # empty filters dumped
    s.append(["cf.reserve", "empty", "100"])
    s.append(["cf.scandump", "empty", "0"])
    s.append(["cf.scandump", "empty", "1"])
    s.append(["cf.add", "empty", "a"])
    s.append(["cf.del", "empty", "a"])
    s.append(["cf.scandump", "empty", "0"])
    s.append(["bf.reserve", "bempty", "0.01", "10"])
    s.append(["bf.scandump", "bempty", "0"])
    s.append(["bf.scandump", "bempty", "1"])
    s.append(["@stats"])
    out.append(s)
    return out


def dumps():
    """SCANDUMP/LOADCHUNK: iterators, bad headers and chunks, both ways."""
    s = head()
    s.append(["bf.reserve", "b", "0.01", "20", "EXPANSION", "2"])
    s.append(["bf.madd", "b"] + ["x%d" % n for n in range(50)])
    for it in ["0", "1", "-1", "x", "2", "25", "10000", "01", "9223372036854775807"]:
        s.append(["bf.scandump", "b", it])
        s.append(["bf.scandump", "miss", it])
    s.append(["@dumpload", "bf", "b", "b2"])
    s.append(["bf.debug", "b2"])
    for it, data in [("1", "short"), ("1", ""), ("1", "\x00" * 20), ("2", "abc"),
                     ("0", "abc"), ("-1", "abc"), ("x", "abc"), ("99999", "abc"),
                     ("1", "\x01" + "\x00" * 7 + "\x01\x00\x00\x00" + "\x05\x00\x00\x00" +
                      "\x02\x00\x00\x00")]:
        s.append(["bf.loadchunk", "nb", it, data])
        s.append(["bf.loadchunk", "b2", it, data])
    s.append(["bf.debug", "b2"])
    s.append(["cf.reserve", "c", "20", "BUCKETSIZE", "2", "EXPANSION", "2"])
    s.append(["cf.insert", "c", "ITEMS"] + ["x%d" % n for n in range(60)])
    for it in ["0", "1", "-1", "x", "2", "25", "10000", "01", "9223372036854775807"]:
        s.append(["cf.scandump", "c", it])
        s.append(["cf.scandump", "miss", it])
    s.append(["@dumpload", "cf", "c", "c2"])
    s.append(["cf.debug", "c2"])
    for it, data in [("1", "short"), ("1", ""), ("1", "\x00" * 38), ("2", "abc"),
                     ("0", "abc"), ("-1", "abc"), ("x", "abc"), ("99999", "abc"),
                     ("1", "\x01" * 38)]:
        s.append(["cf.loadchunk", "nc", it, data])
        s.append(["cf.loadchunk", "c2", it, data])
    s.append(["cf.debug", "c2"])
    s.append(["@stats"])
    return [s]


def resp3(seed):
    g = Gen(seed)
    s = head() + [["@proto", "3"]]
    s += [["bf.add", "b0", "a"], ["bf.info", "b0"], ["bf.info", "b0", "CAPACITY"],
          ["bf.reserve", "bn", "0.1", "10", "NONSCALING"], ["bf.info", "bn"],
          ["bf.info", "bn", "EXPANSION"], ["cf.add", "c0", "a"], ["cf.info", "c0"],
          ["cf.insert", "c0", "ITEMS", "a", "b"], ["cf.insertnx", "c0", "ITEMS", "a", "z"],
          ["cf.addnx", "c0", "a"], ["cf.exists", "c0", "a"], ["cf.count", "c0", "a"],
          ["cf.del", "c0", "a"], ["cf.scandump", "c0", "0"], ["bf.scandump", "b0", "9999"],
          ["command", "docs", "bf.insert"], ["command", "info", "cf.insert", "bf.info"],
          ["bf.madd", "bn"] + ["f%d" % n for n in range(200)], ["bf.debug", "bn"],
          ["bf.insert", "bn", "NOCREATE", "ITEMS", "a"], ["cf.reserve", "cz", "2", "EXPANSION", "0"],
          ["cf.insert", "cz", "ITEMS", "a", "b", "c", "d", "e"], ["cf.mexists", "cz", "a", "q"]]
    s += g.random_mix(150, None)
    s.append(["@proto", "2"])
    return [s]


def generate(seed):
    g = Gen(seed)
    out = []
    out += metadata()
    out += arity()
    out += bf_values()
    out += bf_growth()
    out += cf_values()
    out += cf_growth()
    out += dumps()
    for n in range(8):
        out.append(head() + g.random_mix(150, "bf"))
        out.append(head() + g.random_mix(150, "cf"))
    for n in range(4):
        out.append(head() + g.random_mix(150, None))
    out += resp3(seed + 1)
    return out
