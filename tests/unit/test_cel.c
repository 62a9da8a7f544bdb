/*
 * tests/unit/test_cel.c: the CEL selector language as a table: each row is an expression, the
 * device it runs against, and either its result (true / false) or the error it must give, at
 * compile time ("C:" + a substring, with its line:column where it matters) or at run time
 * ("R:" + a substring), or "COST" (over the cost limit). NVIDIA's DeviceClass selectors and the
 * example selectors of its DRA driver are included verbatim (reference/nvidia-slicing.md §6).
 *
 * Every row that evaluates also checks that the compiler's worst-case cost estimate bounds the
 * cost actually spent. Further tests: cost limits at run time, regex corner cases, the semver
 * parser, and a determinism check (the same program on the same device gives the same result
 * and the same cost).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "cel/cel.h"
#include "cel/cel_regex.h"

/* ---- devices ---- */

static struct fatia_semver v_cc, v_driver, v_cuda;

static struct fatia_cel_attr gpu_attrs[] = {
    {"type", FATIA_CEL_ATTR_STRING, 0, false, "gpu", NULL},
    {"uuid", FATIA_CEL_ATTR_STRING, 0, false, "GPU-6a2b1c3d-0000-4000-8000-000000000000", NULL},
    {"productName", FATIA_CEL_ATTR_STRING, 0, false, "NVIDIA H200", NULL},
    {"brand", FATIA_CEL_ATTR_STRING, 0, false, "Nvidia", NULL},
    {"architecture", FATIA_CEL_ATTR_STRING, 0, false, "Hopper", NULL},
    {"cudaComputeCapability", FATIA_CEL_ATTR_VERSION, 0, false, "9.0.0", &v_cc},
    {"driverVersion", FATIA_CEL_ATTR_VERSION, 0, false, "580.159.4", &v_driver},
    {"cudaDriverVersion", FATIA_CEL_ATTR_VERSION, 0, false, "13.0.0", &v_cuda},
    {"resource.kubernetes.io/pciBusID", FATIA_CEL_ATTR_STRING, 0, false, "0000:19:00.0", NULL},
    {"fatia.dev/nvlinkIsland", FATIA_CEL_ATTR_INT, 1, false, NULL, NULL},
    {"fatia.dev/simulated", FATIA_CEL_ATTR_BOOL, 0, true, NULL, NULL},
};
static struct fatia_cel_capacity gpu_caps[] = {{"memory", {0}}};
static struct fatia_cel_device gpu = {"gpu.nvidia.com", gpu_attrs, FATIA_ARRAY_SIZE(gpu_attrs),
                                      gpu_caps,         1,         false};

static struct fatia_cel_attr mig_attrs[] = {
    {"type", FATIA_CEL_ATTR_STRING, 0, false, "mig", NULL},
    {"profile", FATIA_CEL_ATTR_STRING, 0, false, "1g.18gb", NULL},
    {"parentUUID", FATIA_CEL_ATTR_STRING, 0, false, "GPU-6a2b1c3d-0000-4000-8000-000000000002",
     NULL},
    {"productName", FATIA_CEL_ATTR_STRING, 0, false, "NVIDIA H200", NULL},
};
static struct fatia_cel_capacity mig_caps[] = {{"multiprocessors", {0}}, {"memory", {0}}};
static struct fatia_cel_device mig = {"gpu.nvidia.com", mig_attrs, FATIA_ARRAY_SIZE(mig_attrs),
                                      mig_caps,         2,         true};

static struct fatia_cel_attr ex_attrs[] = {
    {"model", FATIA_CEL_ATTR_STRING, 0, false, "LATEST-GPU-MODEL", NULL},
    {"ext.example.com/family", FATIA_CEL_ATTR_STRING, 0, false, "a100", NULL},
};
static struct fatia_cel_capacity ex_caps[] = {{"modules", {0}}};
static struct fatia_cel_device example = {"dra.example.com", ex_attrs, 2, ex_caps, 1, false};

static void setup_devices(void)
{
    assert_int_equal(fatia_semver_parse("9.0.0", false, &v_cc, NULL, 0), 0);
    assert_int_equal(fatia_semver_parse("580.159.4", false, &v_driver, NULL, 0), 0);
    assert_int_equal(fatia_semver_parse("13.0.0", false, &v_cuda, NULL, 0), 0);
    assert_int_equal(fatia_quantity_parse("143771Mi", &gpu_caps[0].value, NULL, 0), 0);
    assert_int_equal(fatia_quantity_parse("16", &mig_caps[0].value, NULL, 0), 0);
    assert_int_equal(fatia_quantity_parse("16896Mi", &mig_caps[1].value, NULL, 0), 0);
    assert_int_equal(fatia_quantity_parse("4", &ex_caps[0].value, NULL, 0), 0);
}

/* ---- the table ---- */

#define G &gpu
#define M &mig
#define X &example
#define T "T"
#define F "F"

struct ccase {
    const char *expr;
    const struct fatia_cel_device *dev;
    const char *want; /* "T", "F", "C:msg", "R:msg", "COST" */
};

#define NV_GPU \
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
#define NV_MIG \
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"
#define NV_VFIO \
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'"
#define NV_CDD                                         \
    "device.driver == 'compute-domain.nvidia.com' && " \
    "device.attributes['compute-domain.nvidia.com'].type == 'daemon'"
#define NV_CDC                                                             \
    "device.driver == 'compute-domain.nvidia.com' && "                     \
    "device.attributes['compute-domain.nvidia.com'].type == 'channel' && " \
    "device.attributes['compute-domain.nvidia.com'].id == 0"
#define TEN "[0,1,2,3,4,5,6,7,8,9]"

static const struct ccase cases[] = {
    /* NVIDIA's DeviceClasses, verbatim */
    {NV_GPU, G, T},
    {NV_GPU, M, F},
    {NV_GPU, X, F},
    {NV_MIG, M, T},
    {NV_MIG, G, F},
    {NV_VFIO, G, F},
    {NV_CDD, G, F},
    {NV_CDC, G, F},
    /* the dra-driver's example selectors, verbatim */
    {"device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0", G, T},
    {"device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0", M, F},
    {"device.attributes[\"gpu.nvidia.com\"].driverVersion.compareTo(semver(\"550.0.0\")) >= 0", G,
     T},
    {"device.attributes[\"gpu.nvidia.com\"].productName.lowerAscii().matches(\"^.*h100.*$\")", G,
     F},
    {"device.attributes[\"gpu.nvidia.com\"].productName.lowerAscii().matches(\"^.*h200.*$\")", G,
     T},
    {"device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity(\"10\"))", M, T},
    {"device.capacity['gpu.nvidia.com'].multiprocessors.isGreaterThan(quantity(\"10\"))", G,
     "R:1:34: no such key: multiprocessors"},
    {"device.attributes['gpu.nvidia.com'].profile == '1g.5gb'", M, F},
    {"device.attributes['gpu.nvidia.com'].profile == '1g.18gb'", M, T},
    /* the upstream doc example: unqualified names belong to the driver's domain */
    {"device.attributes[\"dra.example.com\"].model == 'LATEST-GPU-MODEL'", X, T},
    {"device.attributes[\"ext.example.com\"].family == 'a100'", X, T},
    {"device.capacity[\"dra.example.com\"].modules == quantity('4')", X, T},
    {"device.attributes['dra.example.com'].family == 'a100'", X, "R:no such key: family"},
    /* missing keys and domains */
    {"device.attributes['gpu.nvidia.com'].nosuch == 'x'", G, "R:1:36: no such key: nosuch"},
    {"device.attributes['no.such.domain'].size() == 0", G, T},
    {"size(device.attributes['gpu.nvidia.com']) == 8", G, T},
    {"has(device.attributes['gpu.nvidia.com'].uuid)", G, T},
    {"has(device.attributes['gpu.nvidia.com'].parentUUID)", G, F},
    {"has(device.attributes['gpu.nvidia.com'].parentUUID) && "
     "device.attributes['gpu.nvidia.com'].parentUUID.startsWith('GPU-')",
     G, F},
    {"has(device.attributes['gpu.nvidia.com'].parentUUID) && "
     "device.attributes['gpu.nvidia.com'].parentUUID.startsWith('GPU-')",
     M, T},
    {"'uuid' in device.attributes['gpu.nvidia.com']", G, T},
    {"'fatia.dev' in device.attributes", G, T},
    {"'nope.dev' in device.attributes", G, F},
    {"has(device.attributes.anything)", G, T},
    {"device.attributes['fatia.dev'].nvlinkIsland == 1", G, T},
    {"device.attributes['fatia.dev'].simulated", G, T},
    {"device.attributes['resource.kubernetes.io'].pciBusID.startsWith('0000:19')", G, T},
    {"device.allowMultipleAllocations", M, T},
    {"!device.allowMultipleAllocations", G, T},
    /* errors absorbed by && and || as CEL specifies */
    {"device.attributes['gpu.nvidia.com'].nosuch == 'x' && false", G, F},
    {"false && device.attributes['gpu.nvidia.com'].nosuch == 'x'", G, F},
    {"device.attributes['gpu.nvidia.com'].nosuch == 'x' || true", G, T},
    {"device.attributes['gpu.nvidia.com'].nosuch == 'x' || false", G, "R:no such key: nosuch"},
    {"true && device.attributes['gpu.nvidia.com'].nosuch == 'x'", G, "R:no such key"},
    {"device.attributes['gpu.nvidia.com'].a == 1 || device.attributes['gpu.nvidia.com'].b == 1", G,
     "R:no such key: a"},
    /* literals, arithmetic, comparison */
    {"1 + 2 * 3 == 7", G, T},
    {"(1 + 2) * 3 == 9", G, T},
    {"7 / 2 == 3 && 7 % 2 == 1 && -7 / 2 == -3 && -7 % 2 == -1", G, T},
    {"2.0 * 3.5 == 7.0", G, T},
    {"1u + 2u == 3u", G, T},
    {"0x10 == 16 && 0xffu == 255u", G, T},
    {"-9223372036854775808 < 0", G, T},
    {"9223372036854775807 + 1 == 0", G, "R:1:21: integer overflow"},
    {"-9223372036854775808 - 1 < 0", G, "R:integer overflow"},
    {"0u - 1u == 0u", G, "R:unsigned integer overflow"},
    {"1 / 0 == 0", G, "R:division by zero"},
    {"1 % 0 == 0", G, "R:modulus by zero"},
    {"1.0 / 0.0 > 1e308", G, T},
    {"1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3 && 1 != 2", G, T},
    {"'abc' < 'abd' && 'b' > 'abc' && 'a' <= 'a'", G, T},
    {"false < true", G, T},
    {"1 < 1.5 && 2u > 1 && 1.0 <= 1u", G, T},
    {"dyn(1) == 1.0 && dyn(1u) == 1", G, T},
    {"dyn('1') == 1", G, F},
    {"dyn(1) != 'a'", G, T},
    {"dyn('a') < 1", G, "R:no such overload for '_<_' applied to (string, int)"},
    {"true ? 1 == 1 : 1 / 0 == 0", G, T},
    {"1 == 2 ? false : true", G, T},
    {"null == null", G, T},
    {"[1, 2] == [1, 2] && [1, 2] != [2, 1]", G, T},
    {"{'a': 1} == {'a': 1} && {'a': 1} != {'a': 2}", G, T},
    {"[1, 'a'] == [1, 'a']", G, T},
    {"1 + 2 == 3 && 'a' + 'b' == 'ab' && [1] + [2] == [1, 2]", G, T},
    {"\"\"\"multi\nline\"\"\" == 'multi\\nline'", G, T},
    {"r'\\d+' == '\\\\d+'", G, T},
    {"'\\x41\\u00e9\\101' == 'A\\u00e9A'", G, T},
    {"size('h\\u00e9llo') == 5", G, T},
    /* in */
    {"device.attributes['gpu.nvidia.com'].productName in ['NVIDIA H100', 'NVIDIA H200']", G, T},
    {"device.attributes['gpu.nvidia.com'].productName in ['NVIDIA A100']", G, F},
    {"'a' in {'a': 1}", G, T},
    {"2 in [1, 2, 3] && !(4 in [1, 2, 3])", G, T},
    /* strings */
    {"device.driver.startsWith('gpu.') && device.driver.endsWith('.com')", G, T},
    {"device.driver.contains('nvidia')", G, T},
    {"device.attributes['gpu.nvidia.com'].architecture.upperAscii() == 'HOPPER'", G, T},
    {"'  x  '.trim() == 'x'", G, T},
    {"'hello'.indexOf('l') == 2 && 'hello'.lastIndexOf('l') == 3 && 'hello'.indexOf('z') == -1", G,
     T},
    {"'hello'.substring(1, 3) == 'el' && 'hello'.substring(2) == 'llo'", G, T},
    {"'hello'.substring(3, 1) == ''", G, "R:invalid substring range"},
    {"'hello'.charAt(1) == 'e' && 'hello'.charAt(5) == ''", G, T},
    {"'hello'.charAt(6) == ''", G, "R:index out of range: 6"},
    {"'a.b.c'.replace('.', '/') == 'a/b/c' && 'a.b.c'.replace('.', '', 1) == 'ab.c'", G, T},
    {"'1g.18gb'.split('.') == ['1g', '18gb'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']", G, T},
    {"['a', 'b'].join('-') == 'a-b' && ['x'].join() == 'x'", G, T},
    {"device.attributes['gpu.nvidia.com'].profile.split('.')[0] == '1g'", M, T},
    {"size(device.driver) == 14 && device.driver.size() == 14", G, T},
    /* matches (RE2 syntax) */
    {"device.attributes['gpu.nvidia.com'].productName.matches('H[12]00')", G, T},
    {"device.attributes['gpu.nvidia.com'].productName.matches('^H200$')", G, F},
    {"device.attributes['gpu.nvidia.com'].productName.matches('(?i)^nvidia h\\\\d{3}$')", G, T},
    {"matches(device.driver, '^gpu\\\\.nvidia\\\\.com$')", G, T},
    {"device.attributes['gpu.nvidia.com'].uuid.matches('^GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{"
     "12}$')",
     G, T},
    {"'abc'.matches('(a')", G,
     "C:1:15: invalid regular expression: error parsing regexp: missing closing )"},
    {"'abc'.matches('\\\\1')", G, "C:invalid escape sequence"},
    {"'abc'.matches('a**')", G, "C:invalid nested repetition operator"},
    {"'abc'.matches('(?=a)')", G, "C:invalid or unsupported Perl syntax"},
    {"'abc'.matches('\\\\pL')", G, "C:Unicode classes"},
    {"'abc'.matches('a{1001}')", G, "C:invalid repeat count"},
    {"'abc'.matches(device.driver)", G, F},
    {"'abc'.matches(dyn('[')) ", G, "R:invalid regular expression"},
    /* quantity */
    {"quantity('1Gi').isLessThan(quantity('1G')) == false", G, T},
    {"quantity('1k') == quantity('1000')", G, T},
    {"quantity('1.5').isInteger() == false && quantity('3').asInteger() == 3", G, T},
    {"quantity('1.5').asInteger() == 1", G, "R:cannot convert value to integer"},
    {"quantity('500m').add(quantity('500m')) == quantity('1') && quantity('2').sub(1) == "
     "quantity('1')",
     G, T},
    {"quantity('-2').sign() == -1 && quantity('0').sign() == 0", G, T},
    {"quantity('1.5').asApproximateFloat() == 1.5", G, T},
    {"isQuantity('12x') == false && isQuantity('12Mi')", G, T},
    {"quantity('12x') == quantity('1')", G, "C:1:10: invalid quantity"},
    {"quantity(dyn('12x')) == quantity('1')", G, "R:invalid quantity"},
    {"device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('140Gi'))", G, T},
    /* semver */
    {"semver('1.2.3').isLessThan(semver('1.10.0'))", G, T},
    {"semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", G, T},
    {"semver('1.0.0+build1') == semver('1.0.0+build2')", G, T},
    {"semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
     G, T},
    {"semver('v1.2', true) == semver('1.2.0')", G, T},
    {"isSemver('1.2') == false && isSemver('v1.2', true)", G, T},
    {"semver('1.2') == semver('1.2.0')", G, "C:invalid semver \"1.2\": No Major.Minor.Patch"},
    {"device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('8.0.0'))", G,
     T},
    /* conversions */
    {"int('42') == 42 && uint('42') == 42u && double('1.5') == 1.5", G, T},
    {"string(42) == '42' && string(1.5) == '1.5' && string(true) == 'true'", G, T},
    {"string(1e6) == '1e+06' && string(0.1) == '0.1' && string(100.0) == '100'", G, T},
    {"int('x') == 1", G, "R:cannot convert string 'x' to int"},
    {"int(2.9) == 2 && int(-2.9) == -2", G, T},
    {"int(1e19) == 1", G, "R:range error"},
    {"uint(-1) == 1u", G, "R:range error"},
    {"bool('true') && !bool('0')", G, T},
    /* macros */
    {"[1, 2, 3].all(x, x > 0)", G, T},
    {"[1, 2, 3].exists(x, x > 2)", G, T},
    {"[1, 2, 3].exists_one(x, x > 1)", G, F},
    {"[1, 2, 3].map(x, x * 2) == [2, 4, 6]", G, T},
    {"[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]", G, T},
    {"[1, 2, 3].filter(x, x % 2 == 1) == [1, 3]", G, T},
    {"{'a': 1, 'b': 2}.all(k, k in ['a', 'b'])", G, T},
    {"device.attributes['gpu.nvidia.com'].exists(k, k == 'uuid')", G, T},
    {"[0, 1].all(x, 1 / x > 0)", G, "R:division by zero"},
    {"[0, 1].exists(x, 1 / x > 0)", G, T},
    {"[1, 0].all(x, x > 0 && 1 / x > 0)", G, F},
    {"cel.bind(dra, device.attributes['gpu.nvidia.com'], dra.type == 'gpu' && "
     "dra.productName.startsWith('NVIDIA'))",
     G, T},
    {"cel.bind(x, 2, cel.bind(x, x * 3, x == 6))", G, T},
    {"[[1, 2], [3]].map(l, l.size()) == [2, 1]", G, T},
    /* compile errors: names and types, with their columns */
    {"device.driver == 'gpu' && devcie.x == 1", G, "C:1:27: undeclared reference to 'devcie'"},
    {"device.nosuch == 'x'", G, "C:1:7: undefined field 'nosuch'"},
    {"device.driver == 1", G, "C:found no matching overload for '_==_' applied to '(string, int)'"},
    {"device.driver", G, "C:must evaluate to bool or the unknown type, not string"},
    {"1 + 'a' == 2", G, "C:found no matching overload for '_+_' applied to '(int, string)'"},
    {"device.driver.startsWith(1)", G, "C:found no matching overload for 'startsWith'"},
    {"nosuchfn(1)", G, "C:1:1: undeclared reference to 'nosuchfn'"},
    {"device.capacity['gpu.nvidia.com'].memory > quantity('1')", G,
     "C:found no matching overload for '_>_' applied to '(Quantity, Quantity)'"},
    {"!1", G, "C:found no matching overload for '!_'"},
    {"true ? 1 : 'a'", G, "C:found no matching overload for '_?_:_'"},
    {"1.foo == 1", G, "C:does not support field selection"},
    {"has(device.nosuch)", G, "C:undefined field 'nosuch'"},
    {"[1].all(x, x)", G, "C:the predicate must be a bool"},
    {"1.all(x, true)", G, "C:cannot be the range of a comprehension"},
    /* syntax errors */
    {"device.driver ==", G, "C:1:17: syntax error: unexpected end of input"},
    {"device.driver = 'x'", G, "C:1:15: unexpected '='"},
    {"device.driver == 'gpu", G, "C:1:18: unterminated string literal"},
    {"(1 == 1", G, "C:syntax error: unexpected end of input, expected ')'"},
    {"1 == 1)", G, "C:1:7: syntax error: unexpected ')'"},
    {"if == 1", G, "C:1:1: reserved identifier 'if'"},
    {"b'abc' == b'abc'", G, "C:bytes literals are not supported"},
    {"'\\q' == 'q'", G, "C:invalid escape sequence"},
    {"9223372036854775808 > 0", G, "C:integer literal out of range"},
    {"has(1)", G, "C:invalid argument to has() macro"},
    {"device.driver == 'gpu.nvidia.com' &&\n  devcie.x", G, "C:2:3: undeclared reference"},
    {"Foo{a: 1}", G, "C:message construction is not supported"},
    {"device.driver == 'x' & true", G, "C:1:22: unexpected '&'"},
    {"", G, "C:syntax error: unexpected end of input"},
    /* cost: the worst case is estimated at compile time... */
    {TEN ".all(a, " TEN ".all(b, " TEN ".all(c, " TEN ".all(d, " TEN ".all(e, " TEN
         ".all(f, a + b + c + d + e + f >= 0))))))",
     G, "C:too complex: the estimated worst-case cost"},
    {"cel.bind(s, '0123456789', cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s + s, "
     "cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s "
     "+ s, cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s + s, "
     "cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s + s, cel.bind(s, s "
     "+ s, cel.bind(s, s + s, cel.bind(s, s + s, size(s) > 0))))))))))))))))))))",
     G, "C:too complex"},
    {TEN ".all(a, " TEN ".all(b, " TEN ".all(c, a + b + c >= 0)))", G, T},
};

static void test_table(void **state)
{
    size_t failed = 0, evaluated = 0;
    (void)state;

    setup_devices();
    assert_true(FATIA_ARRAY_SIZE(cases) >= 100);
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(cases); i++) {
        const struct ccase *c = &cases[i];
        struct fatia_cel_program *p = NULL;
        char why[512] = "";
        bool match = false;
        uint64_t cost = 0;
        int r = fatia_cel_compile(c->expr, strlen(c->expr), &p, why, sizeof(why));
        const char *want = c->want;
        bool ok;

        if (r < 0) {
            ok = (want[0] == 'C' && want[1] == ':' && strstr(why, want + 2)) ||
                 (!strncmp(want, "C:", 2) && false);
            if (!ok)
                fprintf(stderr, "case %zu: %s\n  compile: %s (%s), want %s\n", i, c->expr, why,
                        fatia_err_name(r), want);
            failed += !ok;
            continue;
        }
        r = fatia_cel_eval_device(p, c->dev, 0, &match, &cost, why, sizeof(why));
        evaluated++;
        if (r == 0)
            ok = (!strcmp(want, "T") && match) || (!strcmp(want, "F") && !match);
        else if (r == -FATIA_E_COST)
            ok = !strcmp(want, "COST");
        else
            ok = r == -FATIA_E_EVAL && want[0] == 'R' && strstr(why, want + 2);
        if (!ok)
            fprintf(stderr, "case %zu: %s\n  eval: r=%s match=%d why=%s, want %s\n", i, c->expr,
                    fatia_err_name(r), match, why, want);
        failed += !ok;
        if (cost > fatia_cel_program_max_cost(p)) {
            fprintf(stderr, "case %zu: %s\n  cost %" PRIu64 " above the estimate %" PRIu64 "\n", i,
                    c->expr, cost, fatia_cel_program_max_cost(p));
            failed++;
        }
        fatia_cel_program_free(p);
    }
    if (failed)
        fail_msg("%zu of %zu CEL cases failed", failed, FATIA_ARRAY_SIZE(cases));
    assert_true(evaluated > 80);
}

/* A cost limit stops evaluation wherever it is, and the estimate is an upper bound. */
static void test_cost_limit(void **state)
{
    const char *expr = TEN ".all(a, " TEN ".all(b, " TEN ".all(c, a + b + c >= 0)))";
    struct fatia_cel_program *p;
    char why[256];
    bool match;
    uint64_t cost = 0, cost2 = 0;
    (void)state;

    setup_devices();
    assert_int_equal(fatia_cel_compile(expr, strlen(expr), &p, why, sizeof(why)), 0);
    assert_int_equal(fatia_cel_eval_device(p, &gpu, 0, &match, &cost, why, sizeof(why)), 0);
    assert_true(match);
    assert_true(cost > 1000 && cost <= fatia_cel_program_max_cost(p));
    /* same program, same device: same cost (deterministic) */
    assert_int_equal(fatia_cel_eval_device(p, &gpu, 0, &match, &cost2, why, sizeof(why)), 0);
    assert_int_equal(cost, cost2);
    /* a limit below the cost stops it */
    assert_int_equal(fatia_cel_eval_device(p, &gpu, 500, &match, &cost2, why, sizeof(why)),
                     -FATIA_E_COST);
    assert_non_null(strstr(why, "cost exceeds the limit of 500"));
    assert_true(cost2 > 500 && cost2 < 600);
    /* a cost error is never absorbed by || */
    fatia_cel_program_free(p);
    expr = TEN ".all(a, " TEN ".all(b, " TEN ".all(c, a + b + c >= 0))) || true";
    assert_int_equal(fatia_cel_compile(expr, strlen(expr), &p, why, sizeof(why)), 0);
    assert_int_equal(fatia_cel_eval_device(p, &gpu, 200, &match, NULL, why, sizeof(why)),
                     -FATIA_E_COST);
    fatia_cel_program_free(p);
}

static void test_limits(void **state)
{
    char big[FATIA_CEL_MAX_BYTES + 2], why[256];
    struct fatia_cel_program *p;
    size_t n = 0;
    (void)state;

    memset(big, ' ', sizeof(big));
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(fatia_cel_compile(big, strlen(big), &p, why, sizeof(why)), -FATIA_E_LIMIT);
    /* deep nesting is refused, never the stack */
    for (int i = 0; i < 300; i++)
        big[n++] = '(';
    big[n++] = '1';
    for (int i = 0; i < 300; i++)
        big[n++] = ')';
    big[n] = '\0';
    assert_int_equal(fatia_cel_compile(big, n, &p, why, sizeof(why)), -FATIA_E_LIMIT);
    assert_non_null(strstr(why, "nested more than"));
    n = 0;
    for (int i = 0; i < 2000; i++)
        big[n++] = '!';
    big[n++] = 't';
    big[n] = '\0';
    assert_int_equal(fatia_cel_compile(big, n, &p, why, sizeof(why)), -FATIA_E_LIMIT);
    /* a NUL inside the text is just an unexpected character */
    assert_int_equal(fatia_cel_compile("1 ==\0 1", 7, &p, why, sizeof(why)), -FATIA_E_PARSE);
}

struct rcase {
    const char *re, *text;
    int want; /* 1 match, 0 no match, -1 compile error */
};

static const struct rcase rcases[] = {
    {"abc", "xxabcxx", 1},
    {"^abc", "xxabc", 0},
    {"abc$", "abc\n", 0},
    {"(?m)abc$", "abc\nx", 1},
    {"a.c", "a\nc", 0},
    {"(?s)a.c", "a\nc", 1},
    {"a|b|c", "c", 1},
    {"(a|b)+c", "ababc", 1},
    {"a{2,3}", "aa", 1},
    {"^a{2,3}$", "aaaa", 0},
    {"^a{2,}$", "aaaa", 1},
    {"^a{0,1}b", "b", 1},
    {"[[:digit:]]+", "ab1", 1},
    {"[^a-c]", "abc", 0},
    {"\\bfoo\\b", "a foo b", 1},
    {"\\bfoo\\b", "afoob", 0},
    {"\\Bfoo", "afoo", 1},
    {"(?i)HELLO", "hello", 1},
    {"(?i)k", "\xe2\x84\xaa", 1},
    {"[\\d\\s]+$", "1 2", 1},
    {"\\w+", "___", 1},
    {"\\W", "abc", 0},
    {"\\Qa.b\\E", "axb", 0},
    {"\\Qa.b\\E", "a.b", 1},
    {"\\x41\\x{42}", "AB", 1},
    {"(?:ab)*c", "ababc", 1},
    {"(?P<n>x)", "x", 1},
    {"^$", "", 1},
    {"a*", "", 1},
    {"(a*)*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", 0},
    {"\\Aab\\z", "ab", 1},
    {"é+", "éé", 1},
    {".", "é", 1},
    {"[é]", "é", 1},
    {"(?i)é", "É", -1},
    {"(", "", -1},
    {")", "", -1},
    {"[a", "", -1},
    {"[z-a]", "", -1},
    {"*a", "", -1},
    {"a{2}{3}", "", -1},
    {"(?<=a)b", "", -1},
    {"\\Z", "", -1},
    {"(a{1000}){2}", "", -1},
    {"x{1000}", "x", 0},
    {"a{,2}", "a{,2}", 1},
    {"\\", "", -1},
    {"(?i", "", -1},
};

static void test_regex(void **state)
{
    size_t failed = 0;
    (void)state;

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(rcases); i++) {
        struct fatia_cel_regex *re = NULL;
        char why[256] = "";
        bool m = false;
        int r = fatia_cel_regex_compile(rcases[i].re, strlen(rcases[i].re), &re, why, sizeof(why));
        int got;
        if (r < 0) {
            got = -1;
        } else {
            assert_int_equal(fatia_cel_regex_search(re, rcases[i].text, strlen(rcases[i].text), &m),
                             0);
            got = m;
            fatia_cel_regex_free(re);
        }
        if (got != rcases[i].want) {
            fprintf(stderr, "regex %zu: /%s/ on \"%s\": got %d (%s), want %d\n", i, rcases[i].re,
                    rcases[i].text, got, why, rcases[i].want);
            failed++;
        }
    }
    if (failed)
        fail_msg("%zu regex cases failed", failed);
}

/* Deeply nested groups under a repetition compile and match in linear time (a regression:
 * the repeat-count check once walked the tree twice per level). */
static void test_regex_deep(void **state)
{
    char pat[512];
    size_t n = 0;
    struct fatia_cel_regex *re;
    char why[256];
    bool m = false;
    (void)state;

    for (int i = 0; i < 150; i++)
        pat[n++] = '(';
    pat[n++] = 'a';
    for (int i = 0; i < 150; i++)
        pat[n++] = ')';
    pat[n++] = '*';
    pat[n++] = 'b';
    assert_int_equal(fatia_cel_regex_compile(pat, n, &re, why, sizeof(why)), 0);
    assert_int_equal(fatia_cel_regex_search(re, "aaab", 4, &m), 0);
    assert_true(m);
    fatia_cel_regex_free(re);
    /* deeper than the limit: refused, not the stack */
    n = 0;
    for (int i = 0; i < 250; i++)
        pat[n++] = '(';
    for (int i = 0; i < 250; i++)
        pat[n++] = ')';
    assert_int_equal(fatia_cel_regex_compile(pat, n, &re, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "nests too deeply"));
}

static void test_semver(void **state)
{
    static const char *const order[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                                        "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                                        "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                                        "1.2.0",       "1.10.0",        "2.0.0"};
    static const char *const bad[] = {"",       "1",        "1.2",    "01.2.3",
                                      "1.02.3", "1.2.03",   "1.2.x",  "1.2.3-",
                                      "1.2.3+", "1.2.3-01", "v1.2.3", "1.2.3-a..b"};
    struct fatia_semver a, b;
    char why[128], text[64];
    (void)state;

    for (size_t i = 0; i + 1 < FATIA_ARRAY_SIZE(order); i++) {
        assert_int_equal(fatia_semver_parse(order[i], false, &a, why, sizeof(why)), 0);
        assert_int_equal(fatia_semver_parse(order[i + 1], false, &b, why, sizeof(why)), 0);
        if (fatia_semver_cmp(&a, &b) >= 0 || fatia_semver_cmp(&b, &a) <= 0)
            fail_msg("%s should precede %s", order[i], order[i + 1]);
    }
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(bad); i++)
        if (fatia_semver_parse(bad[i], false, &a, why, sizeof(why)) == 0)
            fail_msg("'%s' should not parse", bad[i]);
    assert_int_equal(fatia_semver_parse("v1.2", true, &a, why, sizeof(why)), 0);
    fatia_semver_format(&a, text, sizeof(text));
    assert_string_equal(text, "1.2.0");
    assert_int_equal(fatia_semver_parse("1.2.3-rc.1+build.5", false, &a, why, sizeof(why)), 0);
    fatia_semver_format(&a, text, sizeof(text));
    assert_string_equal(text, "1.2.3-rc.1+build.5");
    assert_int_equal(fatia_semver_parse("1.2", false, &a, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "No Major.Minor.Patch elements found");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),      cmocka_unit_test(test_cost_limit),
        cmocka_unit_test(test_limits),     cmocka_unit_test(test_regex),
        cmocka_unit_test(test_regex_deep), cmocka_unit_test(test_semver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
