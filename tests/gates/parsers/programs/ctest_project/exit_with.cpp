// Exits with the status given as argv[1], or dies of SIGSEGV for "segv".
#include <csignal>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "segv") == 0) std::raise(SIGSEGV);
    return argc > 1 ? std::atoi(argv[1]) : 0;
}
