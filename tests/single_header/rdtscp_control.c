/* The no-RDTSCP scan's control: a function that holds the instruction
 * (0F 01 F9), compiled and never executed, so the scan proves it can see
 * one. */
unsigned long long tkc_control_rdtscp(void);
unsigned long long tkc_control_rdtscp(void) {
  unsigned lo, hi, aux;
  __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
  return ((unsigned long long)hi << 32) | lo;
}
