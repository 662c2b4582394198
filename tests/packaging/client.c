/*
 * client.c - a program outside the tree, built by tests/packaging/debian.sh
 * against the installed libskewless (`cc client.c $(pkg-config --cflags --libs
 * skewless)`): it loads CONFIG, PUTs KEY=VALUE straight to the key's node,
 * reads it back and checks the bytes. The node may still be starting, so the
 * PUT is tried for up to 20 s. Exit status 0 when the round trip held.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <skewless.h>

int main(int argc, char **argv)
{
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 200};
	struct skl_result res = {0};
	struct skl_agent *a;
	char err[512], buf[256];
	size_t vlen;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: %s CONFIG KEY VALUE\n", argv[0]);
		return 2;
	}
	vlen = strlen(argv[3]);
	rc = skl_create_file(argv[1], &opt, &a, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "skl_create_file: %s (%s)\n", strerror(-rc), err);
		return 1;
	}
	for (int i = 0; i < 100; i++) { /* 100 x (200 ms x 2 attempts, or 200 ms asleep) */
		rc = skl_put_sync(a, argv[2], strlen(argv[2]), argv[3], vlen, NULL, &res);
		if (rc != 0 || res.status == SKL_OK)
			break;
		usleep(200 * 1000);
	}
	if (rc != 0 || res.status != SKL_OK) {
		fprintf(stderr, "PUT %s: %s\n", argv[2],
			rc ? strerror(-rc) : skl_status_name(res.status));
		skl_close(a);
		return 1;
	}
	printf("PUT %s: OK version=%llu node=%u\n", argv[2], (unsigned long long)res.version,
	       res.node);
	rc = skl_get_sync(a, argv[2], strlen(argv[2]), NULL, buf, sizeof(buf), &res);
	if (rc != 0 || res.status != SKL_OK || res.value_len != vlen ||
	    memcmp(buf, argv[3], vlen) != 0) {
		fprintf(stderr, "GET %s: %s, %zu bytes, expected \"%s\"\n", argv[2],
			rc ? strerror(-rc) : skl_status_name(res.status), res.value_len, argv[3]);
		skl_close(a);
		return 1;
	}
	printf("GET %s: OK \"%.*s\"\n", argv[2], (int)res.value_len, buf);
	skl_close(a);
	return 0;
}
