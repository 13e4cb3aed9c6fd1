#include "device.h"
#include <stdio.h>
int main(void)
{
    lbk_device_request req = {LBK_DEVICE_ANY, 0, NULL, 0};
    return lbk_device_list(stdout, &req) == LBK_OK ? 0 : 1;
}
