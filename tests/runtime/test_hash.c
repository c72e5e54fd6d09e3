/* test_hash.c — SHA-256 against the FIPS 180-2 examples, streaming in odd pieces. */
#include <check.h>
#include <string.h>

#include "hash.h"

static const char *hex_of(const void *p, size_t n) {
  static char hex[65];
  unsigned char d[32];
  hash_sha256_digest(p, n, d);
  return hash_hex(d, hex);
}

START_TEST(fips_vectors) {
  ck_assert_str_eq(hex_of("abc", 3),
                   "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  ck_assert_str_eq(hex_of("", 0),
                   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  ck_assert_uint_eq(strlen(m448) * 8, 448);
  ck_assert_str_eq(hex_of(m448, strlen(m448)),
                   "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(million_a) {
  /* FIPS 180-2 appendix B.3: one million 'a', fed in pieces of awkward sizes. */
  static char chunk[997];
  memset(chunk, 'a', sizeof chunk);
  hash_sha256 s;
  hash_sha256_init(&s);
  size_t left = 1000000;
  for (size_t step = 1; left; step = step % 997 + 13) {
    size_t n = step < sizeof chunk ? step : sizeof chunk;
    if (n > left) n = left;
    hash_sha256_update(&s, chunk, n);
    left -= n;
  }
  unsigned char d[32];
  char hex[65];
  hash_sha256_final(&s, d);
  ck_assert_str_eq(hash_hex(d, hex),
                   "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

START_TEST(streaming_equals_one_shot) {
  unsigned char buf[300], a[32], b[32];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 7 + 1);
  for (size_t len = 0; len <= sizeof buf; len += 11) {
    for (size_t cut = 0; cut <= len; cut += 17) {
      hash_sha256 s;
      hash_sha256_init(&s);
      hash_sha256_update(&s, buf, cut);
      hash_sha256_update(&s, NULL, 0);
      hash_sha256_update(&s, buf + cut, len - cut);
      hash_sha256_final(&s, a);
      hash_sha256_digest(buf, len, b);
      ck_assert_mem_eq(a, b, 32);
    }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("runtime_hash");
  TCase *tc = tcase_create("sha256");
  tcase_add_test(tc, fips_vectors);
  tcase_add_test(tc, million_a);
  tcase_add_test(tc, streaming_equals_one_shot);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
