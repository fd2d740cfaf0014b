/* The no-RDTSCP scan's controls: functions that hold the instruction
 * (0F 01 F9), compiled and never executed, so the scan proves it can see
 * one in each form it may take: plainly; behind prefixes the CPU ignores
 * (the disassembler names them before the mnemonic); and where a
 * disassembler's linear sweep reads it as part of another instruction
 * (a jump over a byte that starts a 5-byte MOV), which only the byte
 * scan finds. */
unsigned long long tkc_control_rdtscp(void);
unsigned long long tkc_control_rdtscp_prefixed(void);
void tkc_control_rdtscp_hidden(void);

unsigned long long tkc_control_rdtscp(void) {
  unsigned lo, hi, aux;
  __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
  return ((unsigned long long)hi << 32) | lo;
}

unsigned long long tkc_control_rdtscp_prefixed(void) {
  unsigned lo, hi, aux;
  /* cs ds rdtscp */
  __asm__ __volatile__(".byte 0x2e, 0x3e, 0x0f, 0x01, 0xf9" : "=a"(lo), "=d"(hi), "=c"(aux));
  return ((unsigned long long)hi << 32) | lo;
}

void tkc_control_rdtscp_hidden(void) {
  /* objdump decodes "b8 0f 01 f9 .." as one MOV; the jump lands on the
   * RDTSCP inside it */
  __asm__ __volatile__("jmp 1f\n\t.byte 0xb8\n1:\n\t.byte 0x0f, 0x01, 0xf9"
                       :
                       :
                       : "eax", "edx", "ecx");
}
