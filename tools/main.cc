#include <cstdio>
int main() { std::puts("ingot"); return 0; }
