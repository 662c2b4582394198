/*
 * secret.c - reading the cluster key the config names (auth.key_file).
 *
 * Only the daemons call cfg_read_key(), at start: agents load the same config
 * and never need the key (they send no control message).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"

/* The key file's path: as written when absolute, else next to the config file. */
static void key_path(const struct cfg *cfg, char *out, size_t cap)
{
	char dir[CFG_MAX_PATH];

	if (cfg->auth.key_file[0] == '/') {
		snprintf(out, cap, "%s", cfg->auth.key_file);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", cfg->path);
	snprintf(out, cap, "%s/%s", dirname(dir), cfg->auth.key_file);
}

int cfg_read_key(const struct cfg *cfg, struct wire_key *key, char *err, size_t errlen)
{
	char path[2 * CFG_MAX_PATH], text[2 * WIRE_KEY_MAX_LEN + 64];
	const char *start;
	struct stat st;
	size_t len, n;
	ssize_t got;
	int fd;

	memset(key, 0, sizeof(*key));
	if (!cfg->auth.key_file[0])
		return 0;
	key_path(cfg, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: auth.key_file %s: cannot open: %s", cfg->path, path,
			 strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: auth.key_file %s: not a regular file", cfg->path, path);
		close(fd);
		return -1;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen,
			 "%s: auth.key_file %s: group or others may access it (mode %03o); "
			 "chmod 600 it",
			 cfg->path, path, (unsigned)(st.st_mode & 0777));
		close(fd);
		return -1;
	}
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got < 0) {
		snprintf(err, errlen, "%s: auth.key_file %s: cannot read: %s", cfg->path, path,
			 strerror(errno));
		return -1;
	}
	text[got] = '\0';
	start = text;
	while (isspace((unsigned char)*start))
		start++;
	n = strlen(start);
	while (n && isspace((unsigned char)start[n - 1]))
		n--;
	memmove(text, start, n);
	text[n] = '\0';
	if (n < 2 * WIRE_KEY_MIN_LEN || n > 2 * WIRE_KEY_MAX_LEN ||
	    cfg_parse_hex(text, key->bytes, sizeof(key->bytes), &len) != 0) {
		explicit_bzero(text, sizeof(text));
		snprintf(err, errlen,
			 "%s: auth.key_file %s: expected %d..%d hex digits (make one with "
			 "`openssl rand -hex 32`), got %zu characters",
			 cfg->path, path, 2 * WIRE_KEY_MIN_LEN, 2 * WIRE_KEY_MAX_LEN, n);
		explicit_bzero(key, sizeof(*key));
		return -1;
	}
	explicit_bzero(text, sizeof(text));
	key->len = (uint8_t)len;
	return 1;
}
