/*
 * keys_doc.c - skewless-config-doc: the key tables of docs/config.md, from the key table.
 *
 * With no argument it prints the block; with --update FILE it replaces the
 * block between CFG_KEYS_BEGIN and CFG_KEYS_END in FILE (`ninja -C build
 * config-doc` runs it on docs/config.md). tests/conf/test_keys.c fails when
 * the file's block is not what this prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

/* FILE's text with its generated block replaced; 0, or 1 with the reason on stderr. */
static int update(const char *path)
{
	char *text = NULL, *block = NULL;
	size_t text_len = 0, block_len = 0, old_len;
	const char *old;
	FILE *f = fopen(path, "r"), *mem;
	int rc = 1;

	if (!f) {
		perror(path);
		return 1;
	}
	mem = open_memstream(&text, &text_len);
	for (int ch; (ch = fgetc(f)) != EOF;)
		fputc(ch, mem);
	fclose(f);
	fclose(mem);
	mem = open_memstream(&block, &block_len);
	cfg_keys_markdown(mem);
	fclose(mem);

	old = cfg_keys_block(text, &old_len);
	if (!old) {
		fprintf(stderr, "%s: no \"%s\" ... \"%s\" block\n", path, CFG_KEYS_BEGIN,
			CFG_KEYS_END);
		goto out;
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		goto out;
	}
	fwrite(text, 1, (size_t)(old - text), f);
	fwrite(block, 1, block_len, f);
	fputs(old + old_len, f);
	rc = fclose(f) ? 1 : 0;
out:
	free(text);
	free(block);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--update"))
		return update(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: skewless-config-doc [--update docs/config.md]\n");
		return 64;
	}
	return cfg_keys_markdown(stdout) ? 1 : 0;
}
