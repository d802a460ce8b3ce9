"""Helpers shared by the Python bench scripts (each prints the CPU model it ran on)."""
import platform


def cpu_model():
    """The host kind, which decides the figures (Intel with full-width AVX-512, AMD Zen 4 at half
    width, Zen 5): /proc/cpuinfo's model name with its CPU family and model numbers (a virtual
    machine's model name alone can be as bare as "Intel(R) Xeon(R) Processor") and whether it has
    AVX-512."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or "unknown"
    avx512 = "AVX-512" if "avx512f" in info.get("flags", "").split() else "no AVX-512"
    return (f"{info.get('model name', platform.processor() or 'unknown')} (CPU family {info.get('cpu family', '?')}, "
            f"model {info.get('model', '?')}, {avx512})")
