// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The safetensors header's rules that json-c does not check, read from the
 * header's text once json-c parsed it to an object:
 *   - nothing but spaces after the JSON object (the format's padding);
 *   - every top-level name UTF-8, without a NUL byte, and given once;
 *   - no single-quoted string (json-c takes them, even strict).
 * json-c keeps the last of two equal names (so a file would mean different
 * tensors to different readers), passes bytes that are not UTF-8 (which
 * the Python binding then cannot decode) and cuts a name at a \u0000. UTF-8
 * is decided by glibc's iconv: overlong forms, surrogates and code points
 * above U+10FFFF are refused, as Python's decoder does.
 */
#include <errno.h>
#include <iconv.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file/st_internal.h"

#define NAME_TEXT_MAX 96	/* an escaped name in a message */

int tio_st_utf8(const char *s, size_t n)
{
	char out[256], *in = (char *)s, *o;
	size_t i, left = n, room;
	iconv_t cd;
	int ok = 1;

	for (i = 0; i < n && !(s[i] & 0x80); i++)
		;
	if (i == n)
		return 1;	/* ASCII */
	cd = iconv_open("UTF-32LE", "UTF-8");
	if (cd == (iconv_t)-1)
		return 0;	/* cannot tell: refused */
	while (ok && left) {
		o = out;
		room = sizeof(out);
		if (iconv(cd, &in, &left, &o, &room) == (size_t)-1 && errno != E2BIG)
			ok = 0;
	}
	iconv_close(cd);
	return ok;
}

const char *tio_st_name_text(const char *s, size_t n, char *buf, size_t size)
{
	int plain = tio_st_utf8(s, n) && !memchr(s, 0, n);
	size_t i, at = 0;

	for (i = 0; i < n && at + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (plain ? c >= 0x20 && c != 0x7f : c >= 0x20 && c < 0x7f)
			buf[at++] = (char)c;
		else
			at += (size_t)snprintf(buf + at, size - at, "\\x%02x", c);
	}
	if (i < n)
		at += (size_t)snprintf(buf + at, size - at, "...");
	buf[at] = '\0';
	return buf;
}

static int st_bad_name(const char *path, const char *why, const char *s, size_t n)
{
	char text[NAME_TEXT_MAX];

	return tio_raise_errno(EINVAL, "%s: malformed safetensors file: %s in entry %s", path,
			       why, tio_st_name_text(s, n, text, sizeof(text)));
}

struct name {
	const char *s;
	size_t n;
	char *own;	/* the decoded copy of a name written with escapes */
};

static int name_cmp(const void *a, const void *b)
{
	const struct name *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);

	return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The name in the JSON string token @tok (@len bytes, quotes included). */
static int name_of(struct json_tokener *jt, const char *tok, size_t len, struct name *nm)
{
	json_object *o;

	nm->own = NULL;
	if (!memchr(tok, '\\', len)) {
		nm->s = tok + 1;
		nm->n = len - 2;
		return 0;
	}
	json_tokener_reset(jt);
	o = json_tokener_parse_ex(jt, tok, (int)len);
	if (!o || !json_object_is_type(o, json_type_string)) {
		json_object_put(o);
		return -1;
	}
	nm->n = (size_t)json_object_get_string_len(o);
	nm->own = malloc(nm->n + 1);
	if (nm->own)
		memcpy(nm->own, json_object_get_string(o), nm->n);
	nm->s = nm->own;
	json_object_put(o);
	return nm->own ? 0 : -1;
}

static int check_name(const char *path, const struct name *nm)
{
	if (memchr(nm->s, 0, nm->n))
		return st_bad_name(path, "a name with a NUL byte", nm->s, nm->n);
	if (!tio_st_utf8(nm->s, nm->n))
		return st_bad_name(path, "a name that is not UTF-8", nm->s, nm->n);
	return 0;
}

struct names {
	struct name *v;
	size_t n, cap;
};

/* One more name, from the token @tok of @len bytes. */
static int names_add(struct names *ns, struct json_tokener *jt, const char *tok, size_t len)
{
	struct name *v;

	if (ns->n == ns->cap) {
		v = realloc(ns->v, (ns->cap ? 2 * ns->cap : 64) * sizeof(*v));
		if (!v)
			return -1;
		ns->v = v;
		ns->cap = ns->cap ? 2 * ns->cap : 64;
	}
	if (name_of(jt, tok, len, &ns->v[ns->n]))
		return -1;
	ns->n++;
	return 0;
}

/*
 * The top-level names of the object @json holds (valid JSON: json-c read
 * it), each checked; then sorted, to find one given twice.
 */
static int check_names(const char *path, const char *json, size_t end, struct names *ns)
{
	struct json_tokener *jt = json_tokener_new();
	int depth = 0, want = 0, ret = -1;
	struct name *v;
	size_t i, k;

	if (!jt)
		return tio_raise_errno(ENOMEM, "%s", path);
	for (i = 0; i < end; i++) {
		char c = json[i];

		if (c == '"') {
			k = i;
			for (i++; i < end && json[i] != '"'; i++)
				i += json[i] == '\\';
			if (!want)
				continue;
			want = 0;
			if (names_add(ns, jt, json + k, i + 1 - k)) {
				tio_raise_errno(ENOMEM, "%s", path);
				goto out;
			}
			if (check_name(path, &ns->v[ns->n - 1]))
				goto out;
		} else if (c == '\'') {	/* json-c takes them, JSON does not */
			tio_raise_errno(EINVAL, "%s: malformed safetensors file: the header is "
					"not JSON: a single-quoted string at byte %zu", path, i);
			goto out;
		} else if (c == '{' || c == '[') {
			want = ++depth == 1;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == ',' && depth == 1) {
			want = 1;
		}
	}
	v = ns->v;
	if (ns->n > 1)
		qsort(v, ns->n, sizeof(*v), name_cmp);
	for (i = 1; i < ns->n; i++) {
		if (!name_cmp(&v[i - 1], &v[i])) {
			st_bad_name(path, "a duplicate name", v[i].s, v[i].n);
			goto out;
		}
	}
	ret = 0;
out:
	json_tokener_free(jt);
	return ret;
}

/* Only spaces after the object, which json-c read up to @end. */
static int check_padding(const char *path, const char *json, size_t hlen, size_t end)
{
	size_t i;

	/* json-c reads the whitespace after the object too: back to its brace. */
	while (end && json[end - 1] && strchr(" \t\n\r", json[end - 1]))
		end--;
	for (i = end; i < hlen && json[i] == ' '; i++)
		;
	if (i == hlen)
		return 0;
	return tio_raise_errno(EINVAL, "%s: malformed safetensors file: header bytes after the "
			       "JSON object that are not spaces (0x%02x at byte %zu of %zu)",
			       path, (unsigned char)json[i], i, hlen);
}

int tio_st_not_json(const char *path, const char *json, size_t hlen)
{
	struct json_tokener *jt = json_tokener_new();
	json_object *o = NULL;
	int padded = 0;

	/* Strict JSON refuses what follows the object: say so when it is that. */
	if (jt) {
		o = json_tokener_parse_ex(jt, json, (int)hlen);
		padded = o && json_object_is_type(o, json_type_object) &&
			 check_padding(path, json, hlen, json_tokener_get_parse_end(jt));
		json_object_put(o);
		json_tokener_free(jt);
	}
	if (padded)
		return -1;
	return tio_raise_errno(EINVAL, "%s: malformed safetensors file: the header is not a "
			       "JSON object", path);
}

int tio_st_strict(const char *path, const char *json, size_t hlen, size_t end, size_t members)
{
	struct names ns = { 0 };
	size_t i;
	int ret;

	if (check_padding(path, json, hlen, end))
		return -1;
	ret = check_names(path, json, end, &ns);
	/* A mismatch here would be a name the scan above missed. */
	if (!ret && ns.n != members)
		ret = tio_raise_errno(EINVAL, "%s: malformed safetensors file: %zu names in the "
				      "header, %zu in its JSON object", path, ns.n, members);
	for (i = 0; i < ns.n; i++)
		free(ns.v[i].own);
	free(ns.v);
	return ret;
}
