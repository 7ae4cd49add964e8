# Doubles as Redis 7.2+ prints them (Grisu2), in C: the twin of dtoa.py,
# which explains the algorithm.  Inline: cimported by protocol/_resp.pyx
# (which gives Python fpconv/d2string), scripting/_bridge.pyx and
# persistence/_rdb.pyx.  A buffer of 32 bytes is enough.
cimport cython
from libc.stdint cimport uint64_t
from libc.string cimport memcpy, memset
from libc.math cimport isnan, isinf, signbit

cdef extern from *:
    """
    static const uint64_t OPH_TENS[20] = {
        10000000000000000000ULL, 1000000000000000000ULL, 100000000000000000ULL,
        10000000000000000ULL, 1000000000000000ULL, 100000000000000ULL,
        10000000000000ULL, 1000000000000ULL, 100000000000ULL, 10000000000ULL,
        1000000000ULL, 100000000ULL, 10000000ULL, 1000000ULL, 100000ULL,
        10000ULL, 1000ULL, 100ULL, 10ULL, 1ULL};
    /* 10^(-348 + 8i) ~ OPH_POW_F[i] * 2^OPH_POW_E[i] (dtoa.py's _cached_powers) */
    static const uint64_t OPH_POW_F[87] = {
        18054884314459144840ULL, 13451937075301367670ULL, 10022474136428063862ULL,
        14934650266808366570ULL, 11127181549972568877ULL, 16580792590934885855ULL,
        12353653155963782858ULL, 18408377700990114895ULL, 13715310171984221708ULL,
        10218702384817765436ULL, 15227053142812498563ULL, 11345038669416679861ULL,
        16905424996341287883ULL, 12595523146049147757ULL, 9384396036005875287ULL,
        13983839803942852151ULL, 10418772551374772303ULL, 15525180923007089351ULL,
        11567161174868858868ULL, 17236413322193710309ULL, 12842128665889583758ULL,
        9568131466127621947ULL, 14257626930069360058ULL, 10622759856335341974ULL,
        15829145694278690180ULL, 11793632577567316726ULL, 17573882009934360870ULL,
        13093562431584567480ULL, 9755464219737475723ULL, 14536774485912137811ULL,
        10830740992659433045ULL, 16139061738043178685ULL, 12024538023802026127ULL,
        17917957937422433684ULL, 13349918974505688015ULL, 9946464728195732843ULL,
        14821387422376473014ULL, 11042794154864902060ULL, 16455045573212060422ULL,
        12259964326927110867ULL, 18268770466636286478ULL, 13611294676837538539ULL,
        10141204801825835212ULL, 15111572745182864684ULL, 11258999068426240000ULL,
        16777216000000000000ULL, 12500000000000000000ULL, 9313225746154785156ULL,
        13877787807814456755ULL, 10339757656912845936ULL, 15407439555097886824ULL,
        11479437019748901445ULL, 17105694144590052135ULL, 12744735289059618216ULL,
        9495567745759798747ULL, 14149498560666738074ULL, 10542197943230523224ULL,
        15709099088952724970ULL, 11704190886730495818ULL, 17440603504673385349ULL,
        12994262207056124023ULL, 9681479787123295682ULL, 14426529090290212157ULL,
        10748601772107342003ULL, 16016664761464807395ULL, 11933345169920330789ULL,
        17782069995880619868ULL, 13248674568444952270ULL, 9871031767461413346ULL,
        14708983551653345445ULL, 10959046745042015199ULL, 16330252207878254650ULL,
        12166986024289022870ULL, 18130221999122236476ULL, 13508068024458167312ULL,
        10064294952495520794ULL, 14996968138956309548ULL, 11173611982879273257ULL,
        16649979327439178909ULL, 12405201291620119593ULL, 9242595204427927429ULL,
        13772540099066387757ULL, 10261342003245940623ULL, 15290591125556738113ULL,
        11392378155556871081ULL, 16975966327722178521ULL, 12648080533535911531ULL};
    static const int OPH_POW_E[87] = {
        -1220, -1193, -1166, -1140, -1113, -1087, -1060, -1034, -1007, -980,
        -954, -927, -901, -874, -847, -821, -794, -768, -741, -715,
        -688, -661, -635, -608, -582, -555, -529, -502, -475, -449,
        -422, -396, -369, -343, -316, -289, -263, -236, -210, -183,
        -157, -130, -103, -77, -50, -24, 3, 30, 56, 83,
        109, 136, 162, 189, 216, 242, 269, 295, 322, 348,
        375, 402, 428, 455, 481, 508, 534, 561, 588, 614,
        641, 667, 694, 720, 747, 774, 800, 827, 853, 880,
        907, 933, 960, 986, 1013, 1039, 1066};
    static inline uint64_t oph_dbits(double d) {
        union { double d; uint64_t i; } u; u.d = d; return u.i;
    }
    static inline uint64_t oph_mul(uint64_t a, uint64_t b) {
        /* (a * b + 2^63) >> 64 */
        unsigned __int128 p = (unsigned __int128)a * b + ((unsigned __int128)1 << 63);
        return (uint64_t)(p >> 64);
    }
    """
    const uint64_t OPH_TENS[20]
    const uint64_t OPH_POW_F[87]
    const int OPH_POW_E[87]
    uint64_t oph_dbits(double d) nogil
    uint64_t oph_mul(uint64_t a, uint64_t b) nogil


@cython.cdivision(True)
cdef inline void _dtoa_round(char *digits, int nd, uint64_t delta, uint64_t rem,
                             uint64_t kappa, uint64_t frac) noexcept nogil:
    while (rem < frac and delta - rem >= kappa
           and (rem + kappa < frac or frac - rem > rem + kappa - frac)):
        digits[nd - 1] -= 1
        rem += kappa


@cython.cdivision(True)
cdef inline int _dtoa_grisu2(double d, char *digits, int *K) noexcept nogil:
    cdef uint64_t bits = oph_dbits(d)
    cdef uint64_t frac = bits & 0x000FFFFFFFFFFFFFULL
    cdef int bexp = <int>((bits >> 52) & 0x7FF)
    cdef int exp, ue, le, we, ls, approx, idx, cur, k, e, sh, kappa, nd, unit
    cdef uint64_t uf, lf, wf, cf, wfrac, delta, one, part1, part2, div, digit, rest
    cdef uint64_t hidden = 0x0010000000000000ULL
    if bexp:
        frac += hidden
        exp = bexp - 1075
    else:
        exp = -1074
    uf = (frac << 1) + 1
    ue = exp - 1
    while not (uf & (hidden << 1)):
        uf <<= 1
        ue -= 1
    uf <<= 10
    ue -= 10
    ls = 2 if frac == hidden else 1
    lf = (frac << ls) - 1
    le = exp - ls
    lf <<= le - ue
    wf = frac
    we = exp
    while not (wf & hidden):
        wf <<= 1
        we -= 1
    wf <<= 11
    approx = <int>(-(ue + 87) * 0.30102999566398114)
    idx = (approx + 348) // 8
    while True:
        cur = ue + OPH_POW_E[idx] + 64
        if cur < -60:
            idx += 1
        elif cur > -32:
            idx -= 1
        else:
            break
    k = -348 + idx * 8
    cf = OPH_POW_F[idx]
    wf = oph_mul(wf, cf)
    uf = oph_mul(uf, cf) - 1
    lf = oph_mul(lf, cf) + 1
    e = cur
    K[0] = -k
    wfrac = uf - wf
    delta = uf - lf
    sh = -e
    one = (<uint64_t>1) << sh
    part1 = uf >> sh
    part2 = uf & (one - 1)
    nd = 0
    kappa = 10
    idx = 10
    while kappa > 0:
        div = OPH_TENS[idx]
        idx += 1
        digit = part1 // div
        if digit or nd:
            digits[nd] = <char>(48 + digit)
            nd += 1
        part1 -= digit * div
        kappa -= 1
        rest = (part1 << sh) + part2
        if rest <= delta:
            K[0] += kappa
            _dtoa_round(digits, nd, delta, rest, div << sh, wfrac)
            return nd
    unit = 18
    while True:
        part2 *= 10
        delta *= 10
        kappa -= 1
        digit = part2 >> sh
        if digit or nd:
            digits[nd] = <char>(48 + digit)
            nd += 1
        part2 &= one - 1
        if part2 < delta:
            K[0] += kappa
            _dtoa_round(digits, nd, delta, part2, one, wfrac * OPH_TENS[unit])
            return nd
        unit -= 1


@cython.cdivision(True)
cdef inline int _dtoa_fpconv(double d, char *dest) noexcept nogil:
    # Redis's fpconv_dtoa; dest needs 25 bytes; returns the length
    cdef int n = 0, nd, K = 0, ex, off, i
    cdef char digits[24]
    if signbit(d):
        dest[0] = 45
        n = 1
        d = -d
    if d == 0:
        dest[n] = 48
        return n + 1
    if isnan(d):
        memcpy(dest + n, b"nan", 3)
        return n + 3
    if isinf(d):
        memcpy(dest + n, b"inf", 3)
        return n + 3
    nd = _dtoa_grisu2(d, digits, &K)
    ex = K + nd - 1
    if ex < 0:
        ex = -ex
    if K >= 0 and ex < nd + 7:
        memcpy(dest + n, digits, nd)
        memset(dest + n + nd, 48, K)
        return n + nd + K
    if K < 0 and (K > -7 or ex < 4):
        off = nd + K
        if off <= 0:
            dest[n] = 48
            dest[n + 1] = 46
            memset(dest + n + 2, 48, -off)
            memcpy(dest + n + 2 - off, digits, nd)
            return n + nd + 2 - off
        memcpy(dest + n, digits, off)
        dest[n + off] = 46
        memcpy(dest + n + off + 1, digits + off, nd - off)
        return n + nd + 1
    dest[n] = digits[0]
    n += 1
    if nd > 1:
        dest[n] = 46
        memcpy(dest + n + 1, digits + 1, nd - 1)
        n += nd
    dest[n] = 101
    dest[n + 1] = 45 if K + nd - 1 < 0 else 43
    n += 2
    if ex >= 100:
        dest[n] = <char>(48 + ex // 100)
        n += 1
        ex %= 100
        dest[n] = <char>(48 + ex // 10)
        n += 1
    elif ex >= 10:
        dest[n] = <char>(48 + ex // 10)
        n += 1
    dest[n] = <char>(48 + ex % 10)
    return n + 1


@cython.cdivision(True)
cdef inline int _dtoa_d2string(double d, char *dest) noexcept nogil:
    # Redis's d2string: integral values within +-2^62 as integers
    cdef long long v
    cdef unsigned long long u
    cdef int n = 0, i, j
    cdef char t
    if isnan(d):
        memcpy(dest, b"nan", 3)
        return 3
    if d == 0 or isinf(d) or d < -4611686018427387904.0 or d > 4611686018427387904.0:
        return _dtoa_fpconv(d, dest)
    v = <long long>d
    if <double>v != d:
        return _dtoa_fpconv(d, dest)
    if v < 0:
        dest[0] = 45
        n = 1
        u = <unsigned long long>(-v)
    else:
        u = <unsigned long long>v
    i = n
    while True:
        dest[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    j = n - 1
    while i < j:
        t = dest[i]
        dest[i] = dest[j]
        dest[j] = t
        i += 1
        j -= 1
    return n
