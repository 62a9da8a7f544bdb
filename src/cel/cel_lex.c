/*
 * cel/cel_lex.c: CEL tokens (the lexical grammar of the CEL language definition).
 *
 * Every token carries the line and column of its first character (1-based; columns count
 * Unicode characters, as cel-go's error positions do). String literals are decoded here: single,
 * double and triple quotes, the raw prefix r/R, and the escapes \a \b \f \n \r \t \v \\ \' \" \`
 * \? \xHH \uHHHH \UHHHHHHHH and octal \ooo, each escape naming a code point that is written as
 * UTF-8 (surrogates are refused). Integer literals are decimal or 0x hex, with a u/U suffix for
 * uint; a magnitude of 2^63 is kept for the parser, which accepts it only after unary minus.
 * Bytes literals (b"...") and the reserved words of the spec are refused with a clear message.
 */
#include "base/compat.h"

#include <math.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/str.h"
#include "cel/cel_int.h"

static const char *const tok_names[] = {
    [T_EOF] = "end of input", [T_INT] = "integer",   [T_UINT] = "unsigned integer",
    [T_DOUBLE] = "number",    [T_STRING] = "string", [T_IDENT] = "identifier",
    [T_TRUE] = "'true'",      [T_FALSE] = "'false'", [T_NULL] = "'null'",
    [T_IN] = "'in'",          [T_LPAREN] = "'('",    [T_RPAREN] = "')'",
    [T_LBRACKET] = "'['",     [T_RBRACKET] = "']'",  [T_LBRACE] = "'{'",
    [T_RBRACE] = "'}'",       [T_DOT] = "'.'",       [T_COMMA] = "','",
    [T_COLON] = "':'",        [T_QUESTION] = "'?'",  [T_PLUS] = "'+'",
    [T_MINUS] = "'-'",        [T_STAR] = "'*'",      [T_SLASH] = "'/'",
    [T_PERCENT] = "'%'",      [T_EQ] = "'=='",       [T_NE] = "'!='",
    [T_LT] = "'<'",           [T_LE] = "'<='",       [T_GT] = "'>'",
    [T_GE] = "'>='",          [T_AND] = "'&&'",      [T_OR] = "'||'",
    [T_NOT] = "'!'",
};

const char *fatia_cel_tok_name(enum cel_tok t)
{
    return tok_names[t];
}

void fatia_cel_report_at(char *why, size_t why_n, uint32_t line, uint32_t col, const char *fmt, ...)
{
    va_list ap;
    int len;

    if (!why || !why_n)
        return;
    len = snprintf(why, why_n, "%u:%u: ", line, col);
    if (len < 0 || (size_t)len >= why_n)
        return;
    va_start(ap, fmt);
    vsnprintf(why + len, why_n - (size_t)len, fmt, ap);
    va_end(ap);
}

void fatia_cel_lex_init(struct cel_lexer *lx, const char *src, size_t n, char *why, size_t why_n)
{
    memset(lx, 0, sizeof(*lx));
    lx->src = src;
    lx->n = n;
    lx->line = 1;
    lx->col = 1;
    lx->why = why;
    lx->why_n = why_n;
}

static char peekc(const struct cel_lexer *lx, size_t ahead)
{
    return lx->pos + ahead < lx->n ? lx->src[lx->pos + ahead] : '\0';
}

/* Advances one byte, keeping line and column (continuation bytes do not start a column). */
static void advance(struct cel_lexer *lx)
{
    unsigned char c = (unsigned char)lx->src[lx->pos++];

    if (c == '\n') {
        lx->line++;
        lx->col = 1;
    } else if ((c & 0xC0) != 0x80) {
        lx->col++;
    }
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int hexdigit(char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int put_utf8(struct fatia_buf *b, uint32_t c)
{
    char u[4];
    size_t n;

    if (c < 0x80) {
        u[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        u[0] = (char)(0xC0 | (c >> 6));
        u[1] = (char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        u[0] = (char)(0xE0 | (c >> 12));
        u[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        u[2] = (char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (c >> 18));
        u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        u[3] = (char)(0x80 | (c & 0x3F));
        n = 4;
    }
    return fatia_buf_append(b, u, n);
}

/* Is the byte sequence at s a valid UTF-8 character? Returns its length, 0 if invalid. */
static size_t utf8_valid_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t need;
    uint32_t c;

    if (u[0] < 0x80)
        return 1;
    if ((u[0] & 0xE0) == 0xC0) {
        need = 2;
        c = u[0] & 0x1F;
    } else if ((u[0] & 0xF0) == 0xE0) {
        need = 3;
        c = u[0] & 0x0F;
    } else if ((u[0] & 0xF8) == 0xF0) {
        need = 4;
        c = u[0] & 0x07;
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((u[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (u[i] & 0x3F);
    }
    if ((need == 2 && c < 0x80) || (need == 3 && c < 0x800) || (need == 4 && c < 0x10000) ||
        c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    return need;
}

static int lex_error(struct cel_lexer *lx, uint32_t line, uint32_t col, const char *fmt, ...)
    FATIA_PRINTF(4, 5);

static int lex_error(struct cel_lexer *lx, uint32_t line, uint32_t col, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return CEL_ERROR_AT(lx->why, lx->why_n, line, col, -FATIA_E_PARSE, "%s", msg);
}

static int lex_string(struct cel_lexer *lx, bool raw, struct cel_token *tok)
{
    char q = peekc(lx, 0);
    bool triple = peekc(lx, 1) == q && peekc(lx, 2) == q;
    struct fatia_buf b;
    int r = 0;

    fatia_buf_init(&b, FATIA_CEL_MAX_BYTES * 4);
    for (int i = 0; i < (triple ? 3 : 1); i++)
        advance(lx);
    for (;;) {
        uint32_t line = lx->line, col = lx->col;
        char c;
        if (lx->pos >= lx->n) {
            r = lex_error(lx, tok->line, tok->col, "unterminated string literal");
            goto out;
        }
        c = peekc(lx, 0);
        if (c == q && (!triple || (peekc(lx, 1) == q && peekc(lx, 2) == q))) {
            for (int i = 0; i < (triple ? 3 : 1); i++)
                advance(lx);
            break;
        }
        if ((c == '\n' || c == '\r') && !triple) {
            r = lex_error(lx, tok->line, tok->col,
                          "unterminated string literal (a newline in a "
                          "quoted string needs triple quotes)");
            goto out;
        }
        if (c == '\\' && !raw) {
            char e = peekc(lx, 1);
            uint32_t cp = 0;
            int digits = 0;
            advance(lx);
            if (lx->pos >= lx->n) {
                r = lex_error(lx, line, col, "unterminated string literal");
                goto out;
            }
            advance(lx);
            switch (e) {
            case 'a':
                r = fatia_buf_putc(&b, 7);
                break;
            case 'b':
                r = fatia_buf_putc(&b, '\b');
                break;
            case 'f':
                r = fatia_buf_putc(&b, '\f');
                break;
            case 'n':
                r = fatia_buf_putc(&b, '\n');
                break;
            case 'r':
                r = fatia_buf_putc(&b, '\r');
                break;
            case 't':
                r = fatia_buf_putc(&b, '\t');
                break;
            case 'v':
                r = fatia_buf_putc(&b, '\v');
                break;
            case '\\':
            case '\'':
            case '"':
            case '`':
            case '?':
                r = fatia_buf_putc(&b, e);
                break;
            case 'x':
            case 'X':
            case 'u':
            case 'U':
                digits = (e == 'x' || e == 'X') ? 2 : e == 'u' ? 4 : 8;
                for (int i = 0; i < digits; i++) {
                    int h = hexdigit(peekc(lx, 0));
                    if (h < 0 || lx->pos >= lx->n) {
                        r = lex_error(lx, line, col,
                                      "invalid escape sequence: \\%c needs %d hex "
                                      "digits",
                                      e, digits);
                        goto out;
                    }
                    cp = cp * 16 + (uint32_t)h;
                    advance(lx);
                }
                if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                    r = lex_error(lx, line, col,
                                  "invalid escape sequence: U+%X is not a Unicode "
                                  "character",
                                  cp);
                    goto out;
                }
                r = put_utf8(&b, cp);
                break;
            case '0':
            case '1':
            case '2':
            case '3':
                cp = (uint32_t)(e - '0');
                for (int i = 0; i < 2; i++) {
                    char d = peekc(lx, 0);
                    if (d < '0' || d > '7' || lx->pos >= lx->n) {
                        r = lex_error(lx, line, col,
                                      "invalid escape sequence: octal escapes "
                                      "need three digits");
                        goto out;
                    }
                    cp = cp * 8 + (uint32_t)(d - '0');
                    advance(lx);
                }
                r = put_utf8(&b, cp);
                break;
            default:
                r = lex_error(lx, line, col, "invalid escape sequence '\\%c'", e);
                goto out;
            }
        } else {
            size_t len = utf8_valid_len(lx->src + lx->pos, lx->n - lx->pos);
            if (!len) {
                r = lex_error(lx, line, col, "invalid UTF-8 in string literal");
                goto out;
            }
            r = fatia_buf_append(&b, lx->src + lx->pos, len);
            for (size_t i = 0; i < len; i++)
                advance(lx);
        }
        if (r < 0) {
            if (r == -FATIA_E_LIMIT)
                r = lex_error(lx, tok->line, tok->col, "string literal too long");
            goto out;
        }
    }
    tok->t = T_STRING;
    tok->s_n = b.len;
    tok->s = b.cap ? fatia_buf_steal(&b) : fatia_strdup("");
    if (!tok->s)
        r = -ENOMEM;
out:
    fatia_buf_release(&b);
    return r;
}

static int lex_number(struct cel_lexer *lx, struct cel_token *tok)
{
    size_t start = lx->pos;
    bool is_double = false;
    char text[128];

    if (peekc(lx, 0) == '0' && (peekc(lx, 1) == 'x' || peekc(lx, 1) == 'X')) {
        uint64_t v = 0;
        bool overflow = false;
        advance(lx);
        advance(lx);
        if (hexdigit(peekc(lx, 0)) < 0)
            return lex_error(lx, tok->line, tok->col, "invalid hex literal");
        while (lx->pos < lx->n && hexdigit(peekc(lx, 0)) >= 0) {
            if (v > (UINT64_MAX >> 4))
                overflow = true;
            v = (v << 4) | (uint64_t)hexdigit(peekc(lx, 0));
            advance(lx);
        }
        if (peekc(lx, 0) == 'u' || peekc(lx, 0) == 'U') {
            advance(lx);
            if (overflow)
                return lex_error(lx, tok->line, tok->col,
                                 "unsigned integer literal out of "
                                 "range");
            tok->t = T_UINT;
            tok->u = v;
        } else {
            if (overflow || v > (uint64_t)INT64_MAX + 1)
                return lex_error(lx, tok->line, tok->col, "integer literal out of range");
            tok->t = T_INT;
            tok->u = v; /* magnitude; 2^63 only valid after unary minus */
            tok->i = v > (uint64_t)INT64_MAX ? INT64_MIN : (int64_t)v;
        }
        tok->p = lx->src + start;
        tok->n = lx->pos - start;
        return 0;
    }
    while (is_digit(peekc(lx, 0)))
        advance(lx);
    if (peekc(lx, 0) == '.' && is_digit(peekc(lx, 1))) {
        is_double = true;
        advance(lx);
        while (is_digit(peekc(lx, 0)))
            advance(lx);
    }
    if ((peekc(lx, 0) == 'e' || peekc(lx, 0) == 'E') &&
        (is_digit(peekc(lx, 1)) ||
         ((peekc(lx, 1) == '+' || peekc(lx, 1) == '-') && is_digit(peekc(lx, 2))))) {
        is_double = true;
        advance(lx);
        if (peekc(lx, 0) == '+' || peekc(lx, 0) == '-')
            advance(lx);
        while (is_digit(peekc(lx, 0)))
            advance(lx);
    }
    if (lx->pos - start >= sizeof(text))
        return lex_error(lx, tok->line, tok->col, "number literal too long");
    snprintf(text, sizeof(text), "%.*s", (int)(lx->pos - start), lx->src + start);
    tok->p = lx->src + start;
    tok->n = lx->pos - start;
    if (is_double) {
        if (fatia_parse_double(text, &tok->d) < 0 || isinf(tok->d))
            return lex_error(lx, tok->line, tok->col, "invalid number literal '%s'", text);
        tok->t = T_DOUBLE;
        return 0;
    }
    if (peekc(lx, 0) == 'u' || peekc(lx, 0) == 'U') {
        advance(lx);
        tok->n++;
        if (fatia_parse_u64(text, &tok->u) < 0)
            return lex_error(lx, tok->line, tok->col, "unsigned integer literal out of range");
        tok->t = T_UINT;
        return 0;
    }
    if (fatia_parse_u64(text, &tok->u) < 0 || tok->u > (uint64_t)INT64_MAX + 1)
        return lex_error(lx, tok->line, tok->col, "integer literal out of range");
    tok->t = T_INT;
    tok->i = tok->u > (uint64_t)INT64_MAX ? INT64_MIN : (int64_t)tok->u;
    return 0;
}

static const char *const reserved[] = {
    "as",  "break", "const",   "continue",  "else",   "for", "function", "if",    "import",
    "let", "loop",  "package", "namespace", "return", "var", "void",     "while", NULL};

int fatia_cel_lex_next(struct cel_lexer *lx, struct cel_token *tok)
{
    char c;

    memset(tok, 0, sizeof(*tok));
    /* whitespace and // comments */
    for (;;) {
        c = peekc(lx, 0);
        if (lx->pos < lx->n && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f')) {
            advance(lx);
        } else if (c == '/' && peekc(lx, 1) == '/') {
            while (lx->pos < lx->n && peekc(lx, 0) != '\n')
                advance(lx);
        } else {
            break;
        }
    }
    tok->line = lx->line;
    tok->col = lx->col;
    tok->p = lx->src + lx->pos;
    if (lx->pos >= lx->n) {
        tok->t = T_EOF;
        return 0;
    }
    c = peekc(lx, 0);
    if ((c == 'r' || c == 'R') && (peekc(lx, 1) == '"' || peekc(lx, 1) == '\'')) {
        advance(lx);
        return lex_string(lx, true, tok);
    }
    if ((c == 'b' || c == 'B') && (peekc(lx, 1) == '"' || peekc(lx, 1) == '\'' ||
                                   ((peekc(lx, 1) == 'r' || peekc(lx, 1) == 'R') &&
                                    (peekc(lx, 2) == '"' || peekc(lx, 2) == '\''))))
        return lex_error(lx, tok->line, tok->col,
                         "bytes literals are not supported by fatia's "
                         "CEL");
    if (c == '"' || c == '\'')
        return lex_string(lx, false, tok);
    if (is_digit(c) || (c == '.' && is_digit(peekc(lx, 1))))
        return lex_number(lx, tok);
    if (is_ident_start(c)) {
        size_t start = lx->pos;
        while (is_ident_start(peekc(lx, 0)) || is_digit(peekc(lx, 0)))
            advance(lx);
        tok->n = lx->pos - start;
        tok->t = T_IDENT;
        if (tok->n == 4 && !memcmp(tok->p, "true", 4))
            tok->t = T_TRUE;
        else if (tok->n == 5 && !memcmp(tok->p, "false", 5))
            tok->t = T_FALSE;
        else if (tok->n == 4 && !memcmp(tok->p, "null", 4))
            tok->t = T_NULL;
        else if (tok->n == 2 && !memcmp(tok->p, "in", 2))
            tok->t = T_IN;
        for (const char *const *w = reserved; *w && tok->t == T_IDENT; w++)
            if (strlen(*w) == tok->n && !memcmp(*w, tok->p, tok->n))
                return lex_error(lx, tok->line, tok->col, "reserved identifier '%s'", *w);
        return 0;
    }
    advance(lx);
    tok->n = 1;
    switch (c) {
    case '(':
        tok->t = T_LPAREN;
        return 0;
    case ')':
        tok->t = T_RPAREN;
        return 0;
    case '[':
        tok->t = T_LBRACKET;
        return 0;
    case ']':
        tok->t = T_RBRACKET;
        return 0;
    case '{':
        tok->t = T_LBRACE;
        return 0;
    case '}':
        tok->t = T_RBRACE;
        return 0;
    case '.':
        tok->t = T_DOT;
        return 0;
    case ',':
        tok->t = T_COMMA;
        return 0;
    case ':':
        tok->t = T_COLON;
        return 0;
    case '?':
        tok->t = T_QUESTION;
        return 0;
    case '+':
        tok->t = T_PLUS;
        return 0;
    case '-':
        tok->t = T_MINUS;
        return 0;
    case '*':
        tok->t = T_STAR;
        return 0;
    case '/':
        tok->t = T_SLASH;
        return 0;
    case '%':
        tok->t = T_PERCENT;
        return 0;
    case '=':
        if (peekc(lx, 0) == '=') {
            advance(lx);
            tok->t = T_EQ;
            tok->n = 2;
            return 0;
        }
        return lex_error(lx, tok->line, tok->col, "unexpected '=' (did you mean '=='?)");
    case '!':
        if (peekc(lx, 0) == '=') {
            advance(lx);
            tok->t = T_NE;
            tok->n = 2;
        } else {
            tok->t = T_NOT;
        }
        return 0;
    case '<':
    case '>':
        if (peekc(lx, 0) == '=') {
            advance(lx);
            tok->t = c == '<' ? T_LE : T_GE;
            tok->n = 2;
        } else {
            tok->t = c == '<' ? T_LT : T_GT;
        }
        return 0;
    case '&':
    case '|':
        if (peekc(lx, 0) == c) {
            advance(lx);
            tok->t = c == '&' ? T_AND : T_OR;
            tok->n = 2;
            return 0;
        }
        return lex_error(lx, tok->line, tok->col, "unexpected '%c' (did you mean '%c%c'?)", c, c,
                         c);
    default:
        if ((unsigned char)c >= 0x80)
            return lex_error(lx, tok->line, tok->col, "unexpected character outside a string");
        return lex_error(lx, tok->line, tok->col, "unexpected character '%c'", c);
    }
}
