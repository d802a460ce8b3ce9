"""Helpers shared by the Python bench scripts (each prints the CPU model it ran on)."""
import platform


def cpu_model():
    """/proc/cpuinfo's model name (the host kind matters: Intel full-width AVX-512 or AMD Zen 4)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
