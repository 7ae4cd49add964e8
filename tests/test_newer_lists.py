"""The list surface Redis changed after 7.0, compared byte for byte with
valkey-server 9.1: LPOS refuses a RANK of LLONG_MIN (7.2)."""


def test_lpos_rank_range_same_as_valkey(same_as_valkey):
    same_as_valkey([
        ["RPUSH", "l", "a", "b", "c", "a"],
        ["LPOS", "l", "a", "RANK", "-9223372036854775808"], ["LPOS", "l", "a", "RANK", "-9223372036854775807"],
        ["LPOS", "l", "a", "RANK", "9223372036854775807"], ["LPOS", "l", "a", "RANK", "9223372036854775808"],
        ["LPOS", "l", "a", "RANK", "0"], ["LPOS", "l", "a", "RANK", "x"], ["LPOS", "l", "a", "RANK", "-1"],
        ["LPOS", "l", "a", "RANK", "-2", "COUNT", "0"], ["LPOS", "nokey", "a", "RANK", "-9223372036854775808"],
    ])
