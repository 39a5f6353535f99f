"""memsweep's randomness (include/memsweep/random.hpp): FNV-1a, mix_seed, mt19937_64 and its mappings."""

import math

import numpy as np

MASK64 = (1 << 64) - 1


def stable_hash(text, basis=0xCBF29CE484222325):
    """64-bit FNV-1a of the UTF-8 bytes."""
    value = basis
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x100000001B3) & MASK64
    return value


def mix_seed(seed, stream):
    """splitmix64's finaliser of seed + golden * (stream + 1)."""
    z = (seed + 0x9E3779B97F4A7C15 * (stream + 1)) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class Mt19937_64:
    """std::mt19937_64, its state twisted with numpy 312 words at a time."""

    N, M = 312, 156
    _A = np.uint64(0xB5026F5AA96619E9)
    _UPPER = np.uint64(0xFFFFFFFF80000000)
    _LOWER = np.uint64(0x7FFFFFFF)
    _ONE = np.uint64(1)

    def __init__(self, seed):
        state = [seed & MASK64]
        for i in range(1, self.N):
            prev = state[-1]
            state.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self._state = np.array(state, dtype=np.uint64)
        self._buffer = np.empty(0, dtype=np.uint64)  # tempered outputs not yet handed out

    def _twist(self):
        mt, n, m = self._state, self.N, self.M
        a, upper, lower, one = self._A, self._UPPER, self._LOWER, self._ONE
        y = (mt[0 : n - m] & upper) | (mt[1 : n - m + 1] & lower)
        mt[0 : n - m] = mt[m:n] ^ (y >> one) ^ ((y & one) * a)
        y = (mt[n - m : n - 1] & upper) | (mt[n - m + 1 : n] & lower)
        mt[n - m : n - 1] = mt[0 : m - 1] ^ (y >> one) ^ ((y & one) * a)
        y = (mt[n - 1] & upper) | (mt[0] & lower)
        mt[n - 1] = mt[m - 1] ^ (y >> one) ^ ((y & one) * a)
        return mt.copy()

    @staticmethod
    def _temper(y):
        y ^= (y >> np.uint64(29)) & np.uint64(0x5555555555555555)
        y ^= (y << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000)
        y ^= (y << np.uint64(37)) & np.uint64(0xFFF7EEE000000000)
        y ^= y >> np.uint64(43)
        return y

    def next(self, count):
        """The next `count` outputs, as uint64."""
        parts = [self._buffer]
        have = self._buffer.size
        while have < count:
            parts.append(self._twist())
            have += self.N
        if len(parts) > 1:
            fresh = self._temper(np.concatenate(parts[1:]))
            pool = np.concatenate([self._buffer, fresh])
        else:
            pool = self._buffer
        self._buffer = pool[count:]
        return pool[:count]


class Rng:
    """memsweep::Rng: mt19937_64 with memsweep's own mappings."""

    def __init__(self, seed):
        self.engine = Mt19937_64(seed)

    def next(self, count):
        return self.engine.next(count)

    @staticmethod
    def to_unit(draws):
        """uniform01(): 53 random bits in [0, 1)."""
        return (draws >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def uniform01(self, count):
        return self.to_unit(self.next(count))

    def uniform_int(self, low, high):
        """One draw in [low, high] without modulo bias (rejection)."""
        span = high - low + 1
        limit = MASK64 - MASK64 % span
        while True:
            draw = int(self.next(1)[0])
            if draw < limit:
                return low + draw % span

    def normal(self, count):
        """`count` values of Rng::normal(): Box-Muller, second value dropped."""
        draws = self.next(2 * count)
        u1 = 1.0 - self.to_unit(draws[0::2])
        u2 = self.to_unit(draws[1::2])
        return np.sqrt(-2.0 * np.log(u1)) * np.cos((2.0 * math.pi) * u2)
