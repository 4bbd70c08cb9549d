#!/usr/bin/env python3
"""Unused standard headers in tokchron's library headers (CI stage 06).

What it is: a text check, not include-what-you-use. For each standard header in the table below
it knows the names that header declares; a file under include/tokchron/ that includes one of
them and uses none of its names (comments, strings and #include lines are not read) is
reported, and the check fails. Headers missing from the table are not checked. It does not say
what a file should include instead, nor catch a header needed only transitively.

Why not a real tool: clang-tidy's misc-include-cleaner needs clang-tidy 17 and Debian 12 has 14;
include-what-you-use 0.18 (Debian 12) maps libstdc++'s internal headers loosely and asks to
remove <chrono>, <utility> and <type_traits> from files that use them.

An include the table misjudges stays with a comment on its line: `// include-check: keep`.

Usage: check_includes.py [ROOT]   (ROOT: the repository, default the current directory)
"""
import pathlib
import re
import sys

# Standard header -> a regular expression matching a use of what it declares (after `std::`
# unless the name is a macro or commonly written unqualified).
S = r"\bstd::"
TABLE = {
    "algorithm": S + r"(sort|stable_sort|min|max|minmax|find\w*|lower_bound|upper_bound|equal_range"
    r"|binary_search|copy\w*|fill\w*|transform|remove\w*|unique\w*|reverse\w*|rotate\w*|count\w*"
    r"|all_of|any_of|none_of|for_each\w*|equal|mismatch|\w+_element|partial_sort\w*|\w*partition\w*"
    r"|replace\w*|clamp|is_sorted\w*|merge|inplace_merge|search\w*|includes|set_\w+|\w+_heap"
    r"|generate\w*|shuffle|sample|lexicographical_compare|adjacent_find|move_backward"
    r"|is_permutation|next_permutation|prev_permutation|swap_ranges)\b",
    "array": S + r"array\b",
    "atomic": S + r"(atomic\w*|memory_order\w*)\b",
    "bitset": S + r"bitset\b",
    "cassert": r"\bassert\s*\(",
    "cctype": S + r"(is\w+|tolower|toupper)\s*\(",
    "cerrno": r"\berrno\b|\bE[A-Z]{3,}\b",
    "charconv": S + r"(from_chars\w*|to_chars\w*|chars_format)\b",
    "chrono": r"\bchrono\b|\bchrono_literals\b",
    "cinttypes": r"\b(PRI|SCN)[diouxX]\w*",
    "climits": r"\b(CHAR_BIT|[SU]?(CHAR|SHRT|INT|LONG|LLONG)_(MAX|MIN))\b",
    "cmath": S + r"(sqrt|pow|exp\w*|log\w*|floor|ceil|round|lround|llround|trunc|fabs|abs|isnan"
    r"|isinf|isfinite|isnormal|nextafter|fma|fmod|ldexp|frexp|hypot|sin\w*|cos\w*|tan\w*|atan\w*"
    r"|erf\w*|lgamma|tgamma|copysign|signbit|modf|cbrt|nearbyint|rint|lrint|llrint|fmin|fmax"
    r"|remainder|ilogb|scalbn|nan|fpclassify)\b|\b(HUGE_VAL|INFINITY|NAN|FP_\w+)\b",
    "condition_variable": S + r"(condition_variable\w*|cv_status)\b",
    "cstddef": r"\b(std::)?(size_t|ptrdiff_t|nullptr_t|max_align_t)\b|" + S + r"byte\b|\boffsetof\b",
    "cstdint": r"\b(std::)?u?int(_least|_fast)?(8|16|32|64|max|ptr)_t\b|\bU?INT\w*_(MAX|MIN|C)\b"
    r"|\bSIZE_MAX\b",
    "cstdio": S + r"(\w*printf|\w*scanf|fputs|puts|fwrite|fread|fopen|fclose|fflush|FILE|fgets"
    r"|perror|rename|tmpfile|getc|putc|fputc|fgetc|setvbuf|remove)\b"
    r"|\b(stderr|stdout|stdin|EOF|BUFSIZ|FILE|snprintf|fprintf|fileno)\b",
    "cstdlib": S + r"(abort|exit|getenv|strto\w+|malloc|free|calloc|realloc|ato\w|abs|labs|llabs"
    r"|div|qsort|bsearch|rand|srand|_Exit|quick_exit|atexit|aligned_alloc|system)\b"
    r"|\bEXIT_(SUCCESS|FAILURE)\b|\b(abort|getenv|malloc|free|strtod|strtoull?)\s*\(",
    "cstring": S + r"(mem\w+|str(len|n?cmp|r?chr|str|n?cpy|error|n?cat|c?spn|tok|pbrk))\b"
    r"|\b(memcpy|memmove|memset|memcmp|memchr|strlen|strerror)\s*\(",
    "deque": S + r"deque\b",
    "exception": S + r"(exception\w*|current_exception|rethrow\w*|make_exception_ptr|terminate"
    r"|uncaught_exceptions|nested_exception|throw_with_nested|set_terminate)\b",
    "functional": S + r"(function|hash|c?ref|reference_wrapper|invoke|bind\w*|equal_to|not_equal_to"
    r"|less\w*|greater\w*|not_fn|plus|minus|multiplies|mem_fn|bad_function_call|placeholders)\b",
    "fstream": S + r"(i|o)?fstream\b|" + S + r"(filebuf|basic_\w*fstream)\b",
    "initializer_list": S + r"initializer_list\b",
    "iomanip": S + r"(setw|setprecision|setfill|put_time|get_time|quoted|setbase)\b",
    "ios": S + r"(ios\w*|streamsize|streamoff|fixed|scientific|hex|dec|oct|boolalpha|hexfloat"
    r"|defaultfloat|left|right)\b",
    "iosfwd": S + r"(ostream|istream|iostream|basic_\w+|streambuf|char_traits|fpos|\w*fstream"
    r"|\w*stringstream)\b",
    "iostream": S + r"(w?cout|w?cerr|w?clog|w?cin)\b",
    "istream": S + r"(istream|basic_istream|iostream|getline|ws)\b|>>",
    "iterator": S + r"(c?r?begin|c?r?end|size|ssize|empty|data|next|prev|advance|distance"
    r"|iterator_traits|\w*inserter|\w+_iterator|make_\w+_iterator|\w+_iterator_tag)\b",
    "limits": r"\bnumeric_limits\b",
    "list": S + r"list\b",
    "map": S + r"(multi)?map\b",
    "memory": S + r"(unique_ptr|shared_ptr|weak_ptr|make_unique|make_shared|allocator\w*|addressof"
    r"|align|uninitialized_\w+|destroy\w*|enable_shared_from_this|pointer_traits|\w+_pointer_cast"
    r"|default_delete|owner_less|allocate_shared|construct_at)\b",
    "mutex": S + r"(\w*mutex|lock_guard|unique_lock|scoped_lock|call_once|once_flag|try_lock|lock"
    r"|defer_lock\w*|adopt_lock\w*|try_to_lock\w*)\b",
    "new": S + r"(bad_alloc|nothrow\w*|align_val_t|launder|hardware_\w+_interference_size"
    r"|bad_array_new_length|\w*new_handler)\b|\bnew\s*\(|\boperator\s+(new|delete)\b",
    "numeric": S + r"(accumulate|iota|inner_product|partial_sum|adjacent_difference|gcd|lcm|reduce"
    r"|transform_\w+|\w+_scan|midpoint)\b",
    "optional": S + r"(optional|nullopt\w*|make_optional|bad_optional_access|in_place\w*)\b",
    "ostream": S + r"(ostream|basic_ostream|endl|flush|ends)\b|<<",
    "random": S + r"(mt19937\w*|minstd_rand\w*|random_device|\w+_distribution|default_random_engine"
    r"|seed_seq|generate_canonical|ranlux\w+|knuth_b)\b",
    "ratio": S + r"(ratio\w*|atto|femto|pico|nano|micro|milli|centi|deci|deca|hecto|kilo|mega|giga"
    r"|tera|peta|exa)\b",
    "set": S + r"(multi)?set\b",
    "shared_mutex": S + r"shared_\w*(mutex|lock)\b",
    "sstream": S + r"(\w*stringstream|stringbuf|basic_string\w*stream)\b",
    "stdexcept": S + r"(logic_error|domain_error|invalid_argument|length_error|out_of_range"
    r"|runtime_error|range_error|overflow_error|underflow_error)\b",
    "streambuf": S + r"(basic_)?streambuf\b",
    "string": S + r"(w|u8|u16|u32)?string\b|" + S + r"(basic_string|to_w?string|sto\w+|char_traits"
    r"|getline)\b|\"s\b|\bstring_literals\b",
    "string_view": r"\b(w|u16|u32)?string_view\b|" + S + r"basic_string_view\b|\"sv\b",
    "system_error": S + r"(error_code|error_category|system_error|errc|\w+_category"
    r"|make_error_\w+|error_condition)\b",
    "thread": S + r"(thread|this_thread|jthread)\b|\bthis_thread\b",
    "tuple": S + r"(tuple\w*|make_tuple|tie|get|apply|forward_as_tuple|ignore|make_from_tuple)\b",
    "type_traits": S + r"(\w+_v|\w+_t|is_\w+|enable_if|conditional|decay|remove_\w+|add_\w+"
    r"|integral_constant|true_type|false_type|bool_constant|underlying_type|common_type"
    r"|invoke_result|conjunction|disjunction|negation|aligned_\w+|make_signed|make_unsigned"
    r"|extent|rank|has_\w+|alignment_of|type_identity)\b",
    "typeinfo": r"\btypeid\b|" + S + r"(type_info|bad_cast|bad_typeid)\b",
    "unordered_map": S + r"unordered_(multi)?map\b",
    "unordered_set": S + r"unordered_(multi)?set\b",
    "utility": S + r"(move|forward|swap|pair|make_pair|exchange|declval|\w*index_sequence\w*"
    r"|\w*integer_sequence|as_const|in_place\w*|piecewise_construct\w*|cmp_\w+|get)\b",
    "variant": S + r"(variant\w*|visit|get_if|get|holds_alternative|monostate|bad_variant_access)\b",
    "vector": S + r"vector\b",
}
PATTERNS = {h: re.compile(p) for h, p in TABLE.items()}
INCLUDE = re.compile(r'^\s*#\s*include\s*<([a-z_]+)>(.*)$')
# Comments and literals (a raw string R"x(...)x", a string, a character) are not uses.
NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|R"(\w*)\(.*?\)\1"|"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'',
                   re.S)


def strip(text):
    def blank(m):
        s = m.group(0)
        # a string's suffix ("s", "sv") stays readable as `"s`: keep the closing quote
        return '""' if s.startswith(('"', 'R"')) else ("''" if s.startswith("'") else " ")
    return NOISE.sub(blank, text)


def unused(path):
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    body = strip("\n".join("" if INCLUDE.match(l) else l for l in lines))
    out = []
    for n, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if not m or m.group(1) not in PATTERNS or "include-check: keep" in m.group(2):
            continue
        if not PATTERNS[m.group(1)].search(body):
            out.append((n, m.group(1)))
    return out


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = sorted((root / "include" / "tokchron").rglob("*.hpp"))
    bad = 0
    for f in files:
        for n, h in unused(f):
            print(f"{f.relative_to(root)}:{n}: <{h}> is included but none of its names is used "
                  f"(remove it, or mark the line `// include-check: keep`)")
            bad += 1
    print(f"include check: {len(files)} headers, {bad} unused standard includes "
          f"({len(TABLE)} standard headers known)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
